"""Lowering part by part: where a compiler's whole graph in a precision below float32 misses option
tolerance, the graph is cut into parts of about equal FLOPs (cut_by_cost) and the parts are lowered one
at a time, the most costly first, each kept lowered only where the whole program still meets the
tolerance (lowered_by_parts), at the lowest precision of its ladder that keeps it there (int8, else bf16).
Where the compiler can turn its lowered whole graph back to float32 operation by operation
(Compiler.reverts) and the ladder is that one precision (less any precision no part is estimated faster
in than in float32: bf16 beside int8 on a CPU whose bf16 runs slower than its float32), the parts are
never cut out and compiled on their own: each trial is its whole graph with the operations of the parts
in float32 turned back (no cut costs a call or a fusion, no part is quantized on its own). A part is
tried in a precision only where it runs faster there than in float32, by the compiler's profiles of its
whole graph in both (Compiler.node_times): one slow kernel (an INT8 convolution with a long kernel on a
CPU without INT8 dot products) can make the whole graph slower while every other part is faster; where
the parts estimated faster would save too little (MIN_SAVING), none is tried. Where there are no such
profiles, a precision is tried only where its whole graph ran faster. The user gets the most of the graph
in the lower precision that the bound allows; the candidate then competes on time like any other."""
from typing import Any, Callable, Dict, List, Optional, Sequence, Set, Tuple

import torch

from ..errors import InputError
from ..settings import Settings
from .candidate import Candidate, why_of
from .candidates import program_with_parts
from .check import rounded
from .compilers import Compiler
from .parts import MIN_NAMED, PARTS, CompiledPart, PartBuilder, closed, cut_by_cost, node_ms, part_costs
from .plans import Program, replaced
from .program_format import body_of

# Where the parts estimated faster below float32 would save less than this share of the float32 whole graph's
# time, no part is tried: the trials cost a compile and a judgment each for a gain the contest's timing cannot
# tell from its noise.
MIN_SAVING = 0.02

# A judge of a candidate on the example (and calibration) inputs: (its error, why it misses the bound or
# None, the bound), as Contest.judged.
Judge = Callable[[Candidate], Tuple[float, Optional[str], Optional[float]]]


def lowered_by_parts(name: str, compiler: Compiler, precision: str, builder: PartBuilder, graph: Dict[str, Any],
                     aten: Program, tensors: List[torch.Tensor], settings: Settings, judge: Judge,
                     count: Optional[int] = None, steps: Optional[List[str]] = None,
                     whole: Optional[Tuple[Candidate, Candidate]] = None,
                     estimates: Optional[Dict[str, Dict[str, float]]] = None) -> Candidate:
    """Candidate `name`: the graph cut into parts (cut_by_cost), each compiled by `compiler`, and lowered
    part by part, the most costly first, to `precision` or else the next precision of its ladder (ladder),
    each part kept lowered only where `judge` finds the whole program within the tolerance (the error
    carried by the parts lowered before it included).
    Then each run of neighbouring parts of one precision becomes one part again (fewer calls, and the
    compiler fuses across the cuts), kept where the program still meets the tolerance. Its entry's
    "parts_precision" lists each part tried, its nodes, FLOPs, precision and the program's measured error
    when it was lowered; "parts" how many parts the kept program calls. Out ("no part within tolerance")
    where no part could be lowered. `count`: as cut_by_cost's; `steps`: the ladder, where not the
    compiler's whole one (the contest leaves out a precision that measured slower than float32). Its
    `tried` names the packages its trials loaded, for the contest to release those the kept program does
    not call. `whole`: the compiler's whole graph in `precision` and in float32 (whole_pair), which the
    trials turn back part by part where the compiler reverts `precision` and `steps` is that one (module
    docstring); where that fails, the parts are cut and compiled as elsewhere. `estimates`: each graph
    node's ms in each precision, float32's among them (faster_ladder's): a part is tried only in the
    precisions it is estimated faster in than in float32."""
    body = body_of(aten.text)
    count = PARTS if count is None else count
    steps = ladder(compiler, builder.device, precision) if steps is None else steps
    parts = closed(graph, cut_by_cost(graph, body, count))
    part_ms = {precision: [sum(ms.get(graph["nodes"][i]["name"], 0.0) for i in part) for part in parts]
               for precision, ms in (estimates or {}).items()}
    if "fp32" in part_ms:  # a precision no part is estimated faster in is tried on none: off the ladder
        allowed = _allowed(steps, part_ms, len(parts))
        steps = [s for s in steps if s == precision or any(s in a for a in allowed)]
    tried: Set[str] = set()
    if whole is not None and steps == [precision] and precision in compiler.reverts:
        reverted = _Reverted(name, compiler, builder, graph, body, aten, tensors, whole)
        candidate = _lowered(reverted, steps, settings, judge, parts, part_ms)
        tried = reverted.digests
        if candidate.error is None:  # built: kept, or out for the tolerance
            candidate.tried = tried
            return candidate
        # Its whole graph could not be turned back (an operation it could not read back): the parts are cut.
    made = _Parts(name, compiler, builder, graph, body, aten, tensors)
    candidate = _lowered(made, steps, settings, judge, parts, part_ms)
    candidate.tried = tried | made.digests
    return candidate


def _lowered(made: "_Parts | _Reverted", steps: List[str], settings: Settings, judge: Judge,
             parts: List[List[int]], part_ms: Dict[str, List[float]]) -> Candidate:
    """lowered_by_parts' candidate, its parts made by `made`, tried in the precisions `steps` where
    `part_ms` (each part's estimated ms by precision) does not say they run slower than in float32."""
    name, body, precision = made.name, made.body, steps[0]
    out = Candidate(name, precision=precision, compiler=made.compiler, kind="parts")
    if len(parts) < 2:  # one part is the whole graph, which missed the tolerance already
        out.drop("too small to cut", f"the graph has too few nodes to cut into parts ({len(body['operators'])} "
                 "operators)")
        return out
    try:
        saving = _saving(steps, part_ms)
        if saving is not None and saving < MIN_SAVING * sum(part_ms["fp32"]):
            out.drop("not faster", f"by {made.compiler.name}'s profiles of its whole graphs, the parts that ran "
                     f"faster below float32 would save {saving:.3g} ms of {sum(part_ms['fp32']):.4g}, less than "
                     f"{MIN_SAVING:.0%}", parts_ms=[_estimates(part_ms, k) for k in range(len(parts))])
            return out
        precisions, listed = _lowered_one_by_one(made, parts, steps, replaced(settings, method="sequential"), judge,
                                                 part_ms)
        if all(p == "fp32" for p in precisions):
            out.drop("no part within tolerance", f"none of {len(parts)} parts met the tolerance in {precision}",
                     parts_precision=listed)
            return out
        kept = None
        merged, merged_precisions = _merged_runs(parts, precisions)
        if made.merges and len(merged) < len(parts):
            try:
                kept = _within(made.candidate(merged, merged_precisions, settings, precision), judge)
            except InputError:  # the user's measure failed
                raise
            except Exception as e:  # noqa: BLE001 - the parts as they were tried stand
                why_of(e, f"{name} with its runs merged")
        kept = kept or _within(made.candidate(parts, precisions, settings, precision), judge)
    except InputError:  # the user's measure failed, not the candidate
        raise
    except Exception as e:  # noqa: BLE001 - the candidate is out and the report says why
        return Candidate.failed(name, e, precision=precision, compiler=made.compiler, kind="parts")
    if kept is None:  # its trial met the tolerance; the same parts planned as asked must too
        out.drop("beyond tolerance", "the parts kept lowered missed the tolerance once planned", parts_precision=listed)
        return out
    kept.entry["parts_precision"] = listed
    return kept


class _Parts:
    """The parts of one lowering by parts, each compiled once per precision (compiler.start in float32,
    compiler.lower below), and the candidates made of them."""
    merges = True  # neighbouring parts of one precision are compiled again as one

    def __init__(self, name: str, compiler: Compiler, builder: PartBuilder, graph: Dict[str, Any], body: Dict[str, Any],
                 aten: Program, tensors: List[torch.Tensor]):
        self.name, self.compiler, self.builder, self.graph, self.body = name, compiler, builder, graph, body
        self.aten, self.tensors = aten, tensors
        self.made: Dict[Tuple[Tuple[int, ...], str], CompiledPart] = {}
        self.digests: Set[str] = set()  # of the packages the candidates made so far call (their specs')

    def compiled(self, parts: List[List[int]], precisions: Sequence[str]) -> List[CompiledPart]:
        """`parts` compiled, each in its precision; those not made before made now, those of one
        precision lowered in one call (the compiler may lower them side by side)."""
        new = [p for p in parts if (tuple(p), "fp32") not in self.made]
        if new:
            labels = [f"{self.name} part {k + 1}/{len(new)}" for k in range(len(new))]
            for p, c in zip(new, self.compiler.start(self.builder, self.name, new, labels)()):
                self.made[(tuple(p), "fp32")] = c
        lower: Dict[str, List[List[int]]] = {}
        for p, precision in zip(parts, precisions):
            if (tuple(p), precision) not in self.made and p not in lower.setdefault(precision, []):
                lower[precision].append(p)
        for precision, lowered in lower.items():
            labels = [f"{self.name} part {k + 1}/{len(lowered)} ({precision})" for k in range(len(lowered))]
            made = self.compiler.lower(self.builder, self.name, lowered, labels,
                                       [self.made[(tuple(p), "fp32")] for p in lowered], precision)()
            for p, c in zip(lowered, made):
                self.made[(tuple(p), precision)] = c
        return [self.made[(tuple(p), precision)] for p, precision in zip(parts, precisions)]

    def candidate(self, parts: List[List[int]], precisions: Sequence[str], settings: Settings,
                  precision: str) -> Candidate:
        program = program_with_parts(self.builder, self.graph, self.aten.weights, self.tensors, settings, self.body,
                                     parts, self.compiled(parts, precisions))
        candidate = Candidate.of(self.name, program, precision=precision, compiler=self.compiler, kind="parts")
        self.digests |= candidate.part_digests()
        return candidate


class _Reverted:
    """One lowering by parts on a compiler's whole graph in one precision and in float32 (`whole`: their
    candidates): each trial is the lowered whole graph with the operations of its float32 parts turned back
    (Compiler.revert), one part of the program; the last two made are kept (the final candidate is the
    last trial kept)."""
    merges = False  # the graph is never cut

    def __init__(self, name: str, compiler: Compiler, builder: PartBuilder, graph: Dict[str, Any], body: Dict[str, Any],
                 aten: Program, tensors: List[torch.Tensor], whole: Tuple[Candidate, Candidate]):
        self.name, self.compiler, self.builder, self.graph, self.body = name, compiler, builder, graph, body
        self.aten, self.tensors = aten, tensors
        self.lowered, self.float32 = whole[0].compiled[0], whole[1].compiled[0]
        self.part = whole[0].parts[0]
        self.made: Dict[Tuple[int, ...], CompiledPart] = {}
        self.digests: Set[str] = set()

    def compiled(self, parts: List[List[int]], precisions: Sequence[str]) -> List[CompiledPart]:
        """The whole graph with the nodes of `parts` in "fp32" turned back to float32."""
        in_float = tuple(sorted(n for part, p in zip(parts, precisions) if p == "fp32" for n in part))
        if not in_float:
            return [self.lowered]
        if in_float not in self.made:
            if len(self.made) >= 2:  # a whole graph each: the last trial kept and the one after it
                del self.made[next(iter(self.made))]
            self.made[in_float] = self.compiler.revert(self.builder, self.part, self.lowered, self.float32, in_float)
        return [self.made[in_float]]

    def candidate(self, parts: List[List[int]], precisions: Sequence[str], settings: Settings,
                  precision: str) -> Candidate:
        program = program_with_parts(self.builder, self.graph, self.aten.weights, self.tensors, settings, self.body,
                                     [self.part], self.compiled(parts, precisions))
        candidate = Candidate.of(self.name, program, precision=precision, compiler=self.compiler, kind="parts")
        self.digests |= candidate.part_digests()
        return candidate


def _lowered_one_by_one(made: "_Parts | _Reverted", parts: List[List[int]], steps: List[str], trial_settings: Settings,
                        judge: Judge, part_ms: Optional[Dict[str, List[float]]] = None
                        ) -> Tuple[List[str], List[Dict[str, Any]]]:
    """Each part lowered in turn, the most costly first, to the lowest precision of `steps` (its ladder)
    at which the program meets the tolerance, else left in float32: the parts' precisions, and the
    report's list of them with the error each trial measured ("error": in the precision asked, the
    first step; "tried": every precision of a longer ladder tried, with its error). A precision that
    `part_ms` (each part's estimated ms by precision, float32's among them) says runs a part no faster
    than float32 is not tried on it ("ms": the estimates; "not_tried": where no precision was)."""
    part_ms = part_ms if part_ms and "fp32" in part_ms else {}
    allowed = _allowed(steps, part_ms, len(parts))
    precision = steps[0]
    first = [part for k, part in enumerate(parts) if precision in allowed[k]]
    if first:  # every part tried in it is tried in it first: lowered side by side
        made.compiled(first, [precision] * len(first))
    costs = [part_costs(made.body, part)[0] for part in parts]
    precisions = ["fp32"] * len(parts)
    listed: List[Dict[str, Any]] = [{"nodes": len(part), "flops": costs[k], "precision": "fp32"}
                                    for k, part in enumerate(parts)]
    for k, entry in enumerate(listed):
        if part_ms:
            entry["ms"] = _estimates(part_ms, k)
        if not allowed[k]:
            entry["not_tried"] = "estimated no faster below float32 than in it"
    for k in sorted(range(len(parts)), key=lambda k: -costs[k]):
        tried: Dict[str, float] = {}
        for step in allowed[k]:
            trial = precisions[:k] + [step] + precisions[k + 1:]
            error, why, _ = judge(made.candidate(parts, trial, trial_settings, precision))
            tried[step] = rounded(error)
            if not why:
                precisions, listed[k]["precision"] = trial, step
                break
        if precision in tried:
            listed[k]["error"] = tried[precision]
        if len(steps) > 1 and tried:
            listed[k]["tried"] = tried
    return precisions, listed


def _allowed(steps: List[str], part_ms: Dict[str, List[float]], count: int) -> List[List[str]]:
    """The precisions of `steps` each of `count` parts is tried in: those `part_ms` (each part's estimated
    ms by precision, float32's among them, or empty) does not say run it no faster than float32."""
    return [[s for s in steps if s not in part_ms or part_ms[s][k] < part_ms["fp32"][k]] for k in range(count)]


def _estimates(part_ms: Dict[str, List[float]], k: int) -> Dict[str, float]:
    """Part `k`'s estimated ms by precision, as the report gives them."""
    return {s: round(ms[k], 4) for s, ms in part_ms.items()}


def _saving(steps: List[str], part_ms: Dict[str, List[float]]) -> Optional[float]:
    """The ms the parts would save at most, each in its fastest precision of `steps` by `part_ms`; None where
    `part_ms` does not estimate every precision of `steps` and float32."""
    if not part_ms or any(s not in part_ms for s in steps + ["fp32"]):
        return None
    fp32 = part_ms["fp32"]
    return sum(max(0.0, fp32[k] - min(part_ms[s][k] for s in steps)) for k in range(len(fp32)))


def ladder(compiler: Compiler, device: torch.device, precision: str) -> List[str]:
    """The precisions a part is tried in, lowest first, from `precision` up to (not including) float32:
    those of the compiler's that are not below it (int8 for OpenVINO: int8, then bf16, its packages'
    other precision below float32)."""
    lowered = compiler.lowered(device, precision, "whole")
    return lowered[lowered.index(precision):] if precision in lowered else [precision]


def sibling(candidates: Dict[str, Candidate], of: Candidate, precision: str) -> Optional[Candidate]:
    """The candidate among `candidates` of `of`'s compiler and kind in `precision`, its first way (no
    variant), built, and competing or out only for its accuracy; None where there is none."""
    found = [c for c in candidates.values() if c.compiler is of.compiler and c.kind == of.kind
             and c.precision == precision and not c.variant and c.package is not None
             and (c.competing or c.out["why"] == "beyond tolerance")]
    return found[0] if found else None


def whole_pair(candidates: Dict[str, Candidate], missed: Candidate) -> Optional[Tuple[Candidate, Candidate]]:
    """`missed` (a one-part candidate beyond the tolerance) and its float32 sibling, where both hold their
    compiled part: what lowered_by_parts' trials turn back where the compiler reverts; else None."""
    fp32 = sibling(candidates, missed, "fp32")
    if fp32 is None or len(missed.compiled) != 1 or len(fp32.compiled) != 1 or missed.parts != fp32.parts:
        return None
    return missed, fp32


def faster_ladder(candidates: Dict[str, Candidate], missed: Candidate, builder: PartBuilder,
                  time: Callable[[Dict[str, Candidate]], Dict[str, float]]
                  ) -> Tuple[List[str], Dict[str, Any], Dict[str, Dict[str, float]]]:
    """The ladder `missed`'s parts are tried in (ladder), and the estimates that say which parts are worth
    trying in each precision: each graph node's ms in each precision, float32's among them, read off the
    compiler's profiles of its whole graphs among `candidates` (`missed` itself for the precision asked),
    timed side by side by `time` (empty where a profile cannot say: _node_ms). Without estimates for a
    precision, it is left off the ladder where its whole graph did not run faster than float32's: a part
    kept in a precision slower than float32 makes the program slower (bf16 on a CPU without bf16 matrix
    units). And the report's word on those timings and profiles, by precision."""
    steps = ladder(missed.compiler, builder.device, missed.precision)
    fp32 = sibling(candidates, missed, "fp32")
    lowered = {step: missed if step == missed.precision else sibling(candidates, missed, step) for step in steps}
    lowered = {step: c for step, c in lowered.items() if c is not None and c.package is not None}
    if fp32 is None or not lowered:
        return steps, {}, {}
    times = time(dict({fp32.name: fp32}, **{c.name: c for c in lowered.values()}))
    timed: Dict[str, Any] = {step: {"whole_ms": round(times[c.name], 4), "fp32_ms": round(times[fp32.name], 4),
                                    "tried": times[c.name] < times[fp32.name]} for step, c in lowered.items()}
    estimates: Dict[str, Dict[str, float]] = {}
    float32 = _node_ms(builder, fp32, times[fp32.name])
    for step, c in lowered.items():
        ms = _node_ms(builder, c, times[c.name]) if isinstance(float32, dict) else float32
        if isinstance(ms, dict):
            estimates[step] = ms
            timed[step]["by_part"] = True  # tried where a part is estimated faster, whatever the whole's time
        else:
            timed[step]["profile"] = ms
    if estimates:
        estimates["fp32"] = float32
    return [s for s in steps if s not in timed or timed[s]["tried"] or s in estimates], timed, estimates


def _node_ms(builder: PartBuilder, whole: Candidate, ms: float) -> "Dict[str, float] | str":
    """Each graph node's ms in `whole` (a one-part candidate that holds its compiled part), measured at `ms`,
    by its compiler's profile of it; or why the profile cannot say (none, or too little of its run named)."""
    if len(whole.compiled) != 1 or len(whole.parts) != 1:
        return "not one compiled part"
    try:
        times = whole.compiler.node_times(builder, whole.parts[0], whole.compiled[0])
    except Exception as e:  # noqa: BLE001 - the whole graphs' times decide instead
        return why_of(e, f"{whole.name}'s profile")
    if times.named < MIN_NAMED:
        return f"{times.named:.0%} of its profiled run named, not {MIN_NAMED:.0%}"
    return node_ms(times, ms)


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


__all__ = ["MIN_SAVING", "PARTS", "cut_by_cost", "faster_ladder", "ladder", "lowered_by_parts", "sibling", "whole_pair"]
