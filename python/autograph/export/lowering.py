"""Lowering part by part: where a compiler's whole graph in a precision below float32 misses option
tolerance, the graph is cut into parts of about equal FLOPs (cut_by_cost) and the parts are lowered one
at a time, the most costly first, each kept lowered only where the whole program still meets the
tolerance (lowered_by_parts). The user gets the most of the graph in the lower precision that the bound
allows; the candidate then competes on time like any other."""
from typing import Any, Callable, Dict, List, Optional, Sequence, Set, Tuple

import torch

from .candidate import Candidate, why_of
from .candidates import program_with_parts
from .check import rounded
from .compilers.base import whole_graph_part
from .compilers.inductor import PartBuilder, part_costs, values_read
from .plans import Program
from .program_format import body_of

# How many parts the graph is cut into: enough that a sensitive stretch (a model's last layers, a
# normalization) can stay in float32 while the rest is lowered, few enough that each part keeps most of
# its compiler's fusions and the calls between parts stay cheap beside the parts' own work.
PARTS = 8

# A judge of a candidate on the example (and calibration) inputs: (its error, why it misses the bound or
# None, the bound), as Contest.judged.
Judge = Callable[[Candidate], Tuple[float, Optional[str], Optional[float]]]


def _node_flops(body: Dict[str, Any]) -> Dict[int, float]:
    """Each node's FLOPs: its operator's, on the operator's anchor node."""
    return {op["anchor"]: float(op.get("flops", 0.0)) for op in body["operators"]}


def _crossings(graph: Dict[str, Any], order: List[int]) -> List[int]:
    """For each position k of `order`, how many values made at or before it are read after it (the
    tensors a cut after position k hands from one part to the next)."""
    nodes = graph["nodes"]
    made_at = {v: k for k, i in enumerate(order) for v in nodes[i]["outputs"]}
    last_read: Dict[int, int] = {}
    for k, i in enumerate(order):
        for v in values_read(nodes[i]):
            if v in made_at:
                last_read[v] = max(last_read.get(v, k), k)
    for v in graph["outputs"]:
        if v in made_at:
            last_read[v] = len(order)
    counts = [0] * (len(order) + 1)
    for v, end in last_read.items():
        for k in range(made_at[v], end):
            counts[k] += 1
    return counts


def cut_by_cost(graph: Dict[str, Any], body: Dict[str, Any], count: Optional[int] = None) -> List[List[int]]:
    """The plan `body`'s graph cut into at most `count` parts (lists of node ids, in the plan's order) of
    about equal FLOPs, each cut placed where the fewest tensors cross it within half a part of its even
    place (between blocks rather than inside one, where a compiler fuses across). `count`: PARTS where
    not given."""
    count = PARTS if count is None else count
    order = whole_graph_part(body)[0]
    flops = _node_flops(body)
    total = sum(flops.get(i, 0.0) for i in order)
    if count < 2 or total <= 0 or len(order) < 2 * count:
        return [order]
    running, cumulative = 0.0, []
    for i in order:
        running += flops.get(i, 0.0)
        cumulative.append(running)
    crossing = _crossings(graph, order)
    cuts: List[int] = []
    for k in range(1, count):
        target = total * k / count
        ideal = next(p for p, c in enumerate(cumulative) if c >= target)
        low, high = max(cuts[-1] + 1 if cuts else 0, ideal - len(order) // (2 * count)), \
            min(len(order) - 2, ideal + len(order) // (2 * count))
        if low > high:
            continue
        cuts.append(min(range(low, high + 1), key=lambda p: (crossing[p], abs(p - ideal))))
    bounds = [0] + [p + 1 for p in cuts] + [len(order)]
    return [order[a:b] for a, b in zip(bounds, bounds[1:]) if b > a]


def lowered_by_parts(name: str, compiler: Any, precision: str, builder: PartBuilder, graph: Dict[str, Any],
                     aten: Program, tensors: List[torch.Tensor], settings: Dict[str, Any], judge: Judge,
                     count: Optional[int] = None) -> Candidate:
    """Candidate `name`: the graph cut into parts (cut_by_cost), each compiled by `compiler`, and lowered
    to `precision` part by part, the most costly first, each part kept lowered only where `judge` finds
    the whole program within the tolerance (the error carried by the parts lowered before it included).
    Then each run of neighbouring parts of one precision becomes one part again (fewer calls, and the
    compiler fuses across the cuts), kept where the program still meets the tolerance. Its entry's
    "parts_precision" lists each part tried, its nodes, FLOPs, precision and the program's measured error
    when it was lowered; "parts" how many parts the kept program calls. Out ("no part within tolerance")
    where no part could be lowered. `count`: as cut_by_cost's. Its `tried` names the packages its trials
    loaded, for the contest to release those the kept program does not call."""
    body = body_of(aten.text)
    made = _Parts(name, compiler, builder, graph, body, aten, tensors)
    candidate = _lowered(made, precision, settings, judge, builder.closed(cut_by_cost(graph, body, count)))
    candidate.tried = made.digests
    return candidate


def _lowered(made: "_Parts", precision: str, settings: Dict[str, Any], judge: Judge,
             parts: List[List[int]]) -> Candidate:
    """lowered_by_parts' candidate, its parts made by `made`."""
    name, body = made.name, made.body
    out = Candidate(name, precision=precision)
    if len(parts) < 2:  # one part is the whole graph, which missed the tolerance already
        out.drop("too small to cut", f"the graph has too few nodes to cut into parts ({len(body['operators'])} "
                 "operators)")
        return out
    try:
        precisions, listed = _lowered_one_by_one(made, parts, precision, dict(settings, method="sequential"), judge)
        if precision not in precisions:
            out.drop("no part within tolerance", f"none of {len(parts)} parts met the tolerance in {precision}",
                     parts_precision=listed)
            return out
        kept = None
        merged, merged_precisions = _merged_runs(parts, precisions)
        if len(merged) < len(parts):
            try:
                kept = _within(made.candidate(merged, merged_precisions, settings, precision), judge)
            except Exception as e:  # noqa: BLE001 - the parts as they were tried stand
                why_of(e, f"{name} with its runs merged")
        kept = kept or _within(made.candidate(parts, precisions, settings, precision), judge)
    except Exception as e:  # noqa: BLE001 - the candidate is out and the report says why
        return Candidate.failed(name, e, precision=precision)
    if kept is None:  # its trial met the tolerance; the same parts planned as asked must too
        out.drop("beyond tolerance", "the parts kept lowered missed the tolerance once planned", parts_precision=listed)
        return out
    kept.entry["parts_precision"] = listed
    return kept


class _Parts:
    """The parts of one lowering by parts, each compiled once per precision (compiler.start in float32,
    compiler.lower below), and the candidates made of them."""

    def __init__(self, name: str, compiler: Any, builder: PartBuilder, graph: Dict[str, Any], body: Dict[str, Any],
                 aten: Program, tensors: List[torch.Tensor]):
        self.name, self.compiler, self.builder, self.graph, self.body = name, compiler, builder, graph, body
        self.aten, self.tensors = aten, tensors
        self.made: Dict[Tuple[Tuple[int, ...], str], Any] = {}
        self.digests: Set[str] = set()  # of the packages the candidates made so far call (their specs')

    def compiled(self, parts: List[List[int]], precisions: Sequence[str]) -> List[Any]:
        new = [p for p in parts if (tuple(p), "fp32") not in self.made]
        if new:
            labels = [f"{self.name} part {k + 1}/{len(new)}" for k in range(len(new))]
            for p, c in zip(new, self.compiler.start(self.builder, self.name, new, labels)()):
                self.made[(tuple(p), "fp32")] = c
        for p, precision in zip(parts, precisions):
            if (tuple(p), precision) not in self.made:
                self.made[(tuple(p), precision)] = self.compiler.lower(
                    self.builder, self.name, [p], [f"{self.name} part in {precision}"], [self.made[(tuple(p), "fp32")]],
                    precision)[0]
        return [self.made[(tuple(p), precision)] for p, precision in zip(parts, precisions)]

    def candidate(self, parts: List[List[int]], precisions: Sequence[str], settings: Dict[str, Any],
                  precision: str) -> Candidate:
        program = program_with_parts(self.builder, self.graph, self.aten.weights, self.tensors, settings, self.body,
                                     parts, self.compiled(parts, precisions), precision=list(precisions),
                                     **self.compiler.part_call)
        candidate = Candidate.of(self.name, program, precision=precision)
        self.digests |= candidate.part_digests()
        return candidate


def _lowered_one_by_one(made: _Parts, parts: List[List[int]], precision: str, trial_settings: Dict[str, Any],
                        judge: Judge) -> Tuple[List[str], List[Dict[str, Any]]]:
    """Each part lowered in turn, the most costly first, and kept lowered where the program meets the
    tolerance: the parts' precisions, and the report's list of them with the error each trial measured."""
    costs = [part_costs(made.body, part)[0] for part in parts]
    precisions = ["fp32"] * len(parts)
    listed: List[Dict[str, Any]] = [{"nodes": len(part), "flops": costs[k], "precision": "fp32"}
                                    for k, part in enumerate(parts)]
    for k in sorted(range(len(parts)), key=lambda k: -costs[k]):
        trial = precisions[:k] + [precision] + precisions[k + 1:]
        error, why, _ = judge(made.candidate(parts, trial, trial_settings, precision))
        listed[k]["error"] = rounded(error)
        if not why:
            precisions, listed[k]["precision"] = trial, precision
    return precisions, listed


def _merged_runs(parts: List[List[int]], precisions: List[str]) -> Tuple[List[List[int]], List[str]]:
    """Each run of neighbouring parts of one precision as one part (the parts follow the plan's order)."""
    merged: List[List[int]] = []
    kept: List[str] = []
    for part, precision in zip(parts, precisions):
        if kept and kept[-1] == precision:
            merged[-1] = merged[-1] + part
        else:
            merged.append(list(part))
            kept.append(precision)
    return merged, kept


def _within(candidate: Candidate, judge: Judge) -> Optional[Candidate]:
    """`candidate` with its error in its entry where it meets the tolerance, else None."""
    error, why, _ = judge(candidate)
    if why:
        return None
    candidate.entry["error"] = rounded(error)
    return candidate


__all__ = ["PARTS", "cut_by_cost", "lowered_by_parts"]
