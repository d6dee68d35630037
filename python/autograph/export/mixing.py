"""The best compiler for every part: where several compilers' whole graphs compete (OpenVINO's, ONNX
Runtime's: those whose parts cost little beside their whole graph's compile, Compiler.mixes_parts), each
stretch of the graph goes to the compiler that runs it fastest. Each node's time under each compiler is
read off that compiler's own profile of its whole graph (one profiled run of the package it already built,
node by node: Compiler.node_times), scaled to the whole graph's measured time; the graph is cut, in the
plan's order, only where no compiler's kernel spans the cut, and the compiler of each piece is chosen by
dynamic programming over that order: the least time in all, where each change of compiler costs what a
cut costs for each tensor it hands over (MIX_CUT). Only where a profile cannot say (a compiler without one,
kernels whose names do not lead back to the graph) is the graph cut into MIX_PARTS parts of about equal
FLOPs and each compiled by each compiler and timed alone instead. Where the chosen stretches are not all
one compiler's and promise to beat the fastest candidate, the mix is built (each stretch compiled by its
compiler) and is one more candidate ("mix"), checked and timed as a whole like any other. The report's
"mix" entry says each stretch's time under each compiler, how it was measured, and what was decided, and
why."""
from typing import Any, Callable, Dict, List, NamedTuple, Optional, Sequence, Set, Tuple

import torch

from ..settings import Settings
from . import cache as part_cache
from .candidate import Candidate, why_of
from .candidates import program_with_parts
from .compilers import COMPILERS, Compiler, compiler_on
from .parts import (MIN_NAMED, CompiledPart, PartBuilder, closed, cut_between_kernels, cut_by_cost, launches, node_ms,
                    part_costs, part_spec)
from .plans import Program
from .program_format import body_of
from .timing import time_callables

# How many parts the graph is cut into where the parts are timed alone: few, since each is compiled by
# every compiler and timed, and each cut is a call and a fusion lost.
MIX_PARTS = 4
# Where the slower whole graph is more than this many times the faster one's, no part of it is tried: its
# parts would have to beat the faster compiler's by more than that on average. A bound to save the parts'
# compiles, not a measured one: on the models of bench/results/export-path-2026-11-28-cpu no mix within it
# was kept either.
MIX_GAP = 2.0
# What a cut between two compilers costs, which profiles of whole graphs do not see (a call, each tensor
# handed from one runtime to the other, layouts converted back, the fusions across it, the other's threads
# woken), as a share of the fastest candidate's time per tensor crossing the cut: about the median of what
# each cut cost beyond the profiles' estimate in the mixes of bench/results/mix-cut-2026-12-01-cpu (from
# 0.02 to 0.25 of the fastest whole graph's time).
MIX_CUT = 0.06
# And at least this many ms per tensor crossing the cut: the least a cut cost there was 0.76 ms (fcpe's, of
# 16.6 ms), and on a small graph a share of its time says less than what one more call and layout cost.
MIX_CUT_MIN_MS = 0.5
# Rounds per part and compiler where parts are timed alone (one part at a time, alternating compilers).
_ROUNDS = 5


class Whole(NamedTuple):
    """A compiler's whole graph in the contest: its candidate and its name, and its measured median ms."""
    name: str
    ms: float
    candidate: Candidate


def mixing_compilers(candidates: Dict[str, Candidate], times: Dict[str, float],
                     settings: Settings) -> Dict[Compiler, Whole]:
    """The compilers whose parts may mix, with their whole graphs: those with mixes_parts and option on,
    whose whole graph in float32 competes and was timed within MIX_GAP of the fastest of them."""
    whole: Dict[Compiler, Whole] = {}
    for name, c in candidates.items():
        if c.compiler is not None and c.compiler.mixes_parts and compiler_on(c.compiler, settings) \
                and c.kind == "whole" and not c.lowered and c.competing and name in times:
            if c.compiler not in whole or times[name] < whole[c.compiler].ms:
                whole[c.compiler] = Whole(name, times[name], c)
    if len(whole) < 2:
        return {}
    fastest = min(w.ms for w in whole.values())
    near = {c: whole[c] for c in COMPILERS if c in whole and whole[c].ms <= fastest * MIX_GAP}
    return near if len(near) >= 2 else {}


class Pieces(NamedTuple):
    """The graph cut where no compiler's kernel spans the cut (`pieces`, in the plan's order), the tensors
    crossing each cut (`crossing`, one fewer), and each piece's estimated ms under each compiler (`ms`, by
    label)."""
    pieces: List[List[int]]
    crossing: List[int]
    ms: List[Dict[str, float]]


def _profiled(compilers: Dict[Compiler, Whole], builder: PartBuilder, graph: Dict[str, Any], body: Dict[str, Any],
              entry: Dict[str, Any]) -> Optional[Pieces]:
    """The pieces and their ms under each compiler, from its profile of its whole graph (Compiler.node_times:
    each node's share of the profiled run times the whole graph's measured ms), or None where a compiler's
    profile cannot say (entry["profiled"] says, per compiler, the share of its run named, or its error)."""
    profiled = entry["profiled"] = {}
    by_node: Dict[str, Dict[str, float]] = {}
    fused: List[Tuple[str, ...]] = []
    for compiler, w in compilers.items():
        try:  # the package its whole-graph candidate built and the contest timed
            times = compiler.node_times(builder, w.candidate.parts[0], w.candidate.compiled[0])
        except Exception as e:  # noqa: BLE001 - the parts are timed alone instead
            profiled[compiler.label] = {"error": why_of(e, f"{compiler.name}'s profile")}
            return None
        profiled[compiler.label] = {"named": round(times.named, 3)}
        if times.named < MIN_NAMED:
            return None
        by_node[compiler.label] = node_ms(times, w.ms)
        fused.extend(times.fused)
    pieces, crossing = cut_between_kernels(graph, body, fused)
    names = [[graph["nodes"][i]["name"] for i in piece] for piece in pieces]
    return Pieces(pieces, crossing, [{label: sum(ms.get(n, 0.0) for n in piece) for label, ms in by_node.items()}
                                     for piece in names])


def cheapest_owners(ms: Sequence[Dict[str, float]], switch: Sequence[float]) -> List[str]:
    """The compiler (label) of each piece that makes the least time in all: the pieces' ms under their
    compilers plus `switch[k]` wherever pieces k and k + 1 have different ones (dynamic programming over
    the pieces in order)."""
    labels = list(ms[0])
    cost = dict(ms[0])
    chosen: Dict[str, List[str]] = {label: [label] for label in labels}
    for k, piece in enumerate(ms[1:]):
        came = {label: min(labels, key=lambda before: cost[before] + (0.0 if before == label else switch[k]))
                for label in labels}
        cost = {label: cost[came[label]] + (0.0 if came[label] == label else switch[k]) + piece[label]
                for label in labels}
        chosen = {label: chosen[came[label]] + [label] for label in labels}
    return chosen[min(labels, key=cost.get)]


def views_with_neighbours(graph: Dict[str, Any], pieces: List[List[int]], labels: List[str]) -> List[str]:
    """`labels` with each piece of views alone given the compiler of the piece before it (at the start, of
    the first that computes): a part of views alone is no part (parts.closed drops it), and the parts of
    one compiler around it, made one, would both feed it and read it."""
    computes = [launches(graph, piece) for piece in pieces]
    if not any(computes):
        return list(labels)
    out = list(labels)
    for k, computing in enumerate(computes):
        if not computing:
            out[k] = out[k - 1] if k > 0 else labels[computes.index(True)]
    return out


def _part_call(made: CompiledPart, builder: PartBuilder, body: Dict[str, Any], part: Sequence[int]) -> Callable[[], Any]:
    """The compiled part alone as a call on example inputs of its recorded shapes."""
    namespace, op = made.op.split("::")
    run = getattr(getattr(torch.ops, namespace), op)
    spec = part_spec(made, builder.graph["values"], body, part, builder.device)
    inputs = list(builder.examples(made.input_ids))
    package = torch.frombuffer(bytearray(made.package), dtype=torch.uint8)
    return lambda: run(inputs, package, spec)


def _compiled(compilers: List[Compiler], builder: PartBuilder, parts: List[List[int]]) -> Dict[Compiler, Any]:
    """Each compiler's parts, every compile started before any is waited for (each compiler's conversions
    run in a process of its own); a compiler that fails is left out with its error."""
    started = {}
    for compiler in compilers:
        labels = [f"mix part {k + 1}/{len(parts)} ({compiler.name})" for k in range(len(parts))]
        try:
            started[compiler] = compiler.start(builder, f"mix_{compiler.label}", parts, labels)
        except Exception as e:  # noqa: BLE001 - that compiler's parts are out; the entry says why
            started[compiler] = e
    out: Dict[Compiler, Any] = {}
    for compiler, wait in started.items():
        try:
            out[compiler] = wait if isinstance(wait, Exception) else wait()
        except Exception as e:  # noqa: BLE001 - as above
            out[compiler] = e
    return out


def _timed_parts(compiled: Dict[Compiler, List[CompiledPart]], builder: PartBuilder, body: Dict[str, Any],
                 parts: List[List[int]]) -> List[Dict[str, float]]:
    """Each part's median ms under each compiler, one part at a time (the compilers alternating)."""
    times = []
    for k, part in enumerate(parts):
        calls = {c.label: _part_call(made[k], builder, body, part) for c, made in compiled.items()}
        times.append(time_callables(calls, builder.device, _ROUNDS))
    return times


def _merged(parts: List[List[int]], chosen: List[Compiler]) -> Tuple[List[List[int]], List[Compiler]]:
    """Each run of neighbouring parts of one compiler as one part."""
    merged: List[List[int]] = []
    owners: List[Compiler] = []
    for part, owner in zip(parts, chosen):
        if owners and owners[-1] is owner:
            merged[-1] = merged[-1] + part
        else:
            merged.append(list(part))
            owners.append(owner)
    return merged, owners


def _closed_runs(graph: Dict[str, Any], runs: List[List[int]], owners: List[Compiler]) -> Tuple[List[List[int]], List[Compiler]]:
    """The runs closed (parts.closed: only tensors cross them, none of views alone), each with the owner of
    the run its first node was in."""
    owner_of = {i: owner for run, owner in zip(runs, owners) for i in run}
    result = closed(graph, runs)
    return result, [owner_of[min(part, key=lambda i: (graph["nodes"][i]["op"] == "getitem", i))] for part in result]


def _chosen(graph: Dict[str, Any], pieces: Pieces, by_label: Dict[str, Compiler],
            fastest_ms: float) -> Tuple[List[List[int]], List[Compiler], List[Dict[str, float]], float]:
    """The pieces' cheapest compilers (cheapest_owners; a change costing MIX_CUT of `fastest_ms`, at least
    MIX_CUT_MIN_MS, per tensor crossing its cut) as runs of one compiler each, closed, with their ms under
    each compiler and what the cuts between them cost in all."""
    switch = [max(MIX_CUT * fastest_ms, MIX_CUT_MIN_MS) * n for n in pieces.crossing]
    labels = views_with_neighbours(graph, pieces.pieces, cheapest_owners(pieces.ms, switch))
    cuts_ms = sum(ms for k, ms in enumerate(switch) if labels[k] != labels[k + 1])
    runs, owners = _closed_runs(graph, *_merged(pieces.pieces, [by_label[label] for label in labels]))
    piece_of = {i: k for k, piece in enumerate(pieces.pieces) for i in piece}
    times = [{label: sum(pieces.ms[k][label] for k in {piece_of[i] for i in run}) for label in by_label}
             for run in runs]
    return runs, owners, times, cuts_ms


def mixed(builder: PartBuilder, graph: Dict[str, Any], aten: Program, tensors: List[torch.Tensor],
          settings: Settings, compilers: Dict[Compiler, Whole], fastest_ms: float,
          entry: Dict[str, Any], loaded: Set[str]) -> Optional[Candidate]:
    """The candidate "mix" of `compilers`' parts (module docstring), or None where no mix could beat the
    fastest candidate (`fastest_ms`); `entry` (the report's "mix") gets each part's nodes, FLOPs and time
    under each compiler ("estimated_by" says how), each part's compiler, and the decision; `loaded` the
    digests of the packages loaded to time parts alone."""
    body = body_of(aten.text)
    entry["compilers"] = [c.name for c in compilers]
    by_label = {c.label: c for c in compilers}
    pieces = _profiled(compilers, builder, graph, body, entry)
    if pieces is not None:
        entry["estimated_by"] = "each compiler's profile of its whole graph, by node, scaled to its measured time"
        if len(pieces.pieces) < 2:
            entry["decision"] = "not mixed: no place in the graph that no compiler's kernel spans"
            return None
        runs, owners, times, cuts_ms = _chosen(graph, pieces, by_label, fastest_ms)
        return _decided(builder, graph, aten, tensors, settings, body, runs, owners, times, cuts_ms, fastest_ms,
                        entry)
    entry["estimated_by"] = "each part compiled by each compiler and timed alone"
    parts = closed(graph, cut_by_cost(graph, body, MIX_PARTS))
    if len(parts) < 2:
        entry["decision"] = "not mixed: the graph is too small to cut into parts"
        return None
    made = _compiled(list(compilers), builder, parts)
    failed = {c.name: why_of(e, f"mix parts of {c.name}") for c, e in made.items() if isinstance(e, Exception)}
    if failed:
        entry["errors"] = failed
    compiled = {c: m for c, m in made.items() if not isinstance(m, Exception)}
    if len(compiled) < 2:
        entry["decision"] = "not mixed: fewer than two compilers built the parts"
        return None
    # Timed alone, the parts are loaded by the runners: the contest lets them go unless the kept program calls them.
    loaded.update(part_cache.sha256_of(made.package) for made_parts in compiled.values() for made in made_parts)
    times = _timed_parts(compiled, builder, body, parts)
    chosen = [by_label[min(t, key=t.get)] for t in times]
    return _decided(builder, graph, aten, tensors, settings, body, parts, chosen, times, 0.0, fastest_ms, entry,
                    compiled)


def _decided(builder: PartBuilder, graph: Dict[str, Any], aten: Program, tensors: List[torch.Tensor],
             settings: Settings, body: Dict[str, Any], parts: List[List[int]], chosen: List[Compiler],
             times: List[Dict[str, float]], cuts_ms: float, fastest_ms: float, entry: Dict[str, Any],
             compiled: Optional[Dict[Compiler, List[CompiledPart]]] = None) -> Optional[Candidate]:
    """The mix of `parts` by `chosen` compilers where that promises to beat the fastest candidate: their
    times (`times`, under each compiler) plus what the cuts between compilers cost (`cuts_ms`) below
    `fastest_ms`; else None. The decision, and why, in `entry`."""
    entry["parts"] = [{"nodes": len(part), "flops": part_costs(body, part)[0],
                       "ms": {label: round(ms, 4) for label, ms in t.items()}, "compiler": owner.label}
                      for part, t, owner in zip(parts, times, chosen)]
    chosen_sum = sum(t[owner.label] for t, owner in zip(times, chosen))
    entry["fastest_parts_ms"] = round(chosen_sum, 4)
    entry["cuts_ms"], entry["fastest_ms"] = round(cuts_ms, 4), round(fastest_ms, 4)
    if len({id(c) for c in chosen}) == 1:
        entry["decision"] = (f"not mixed: {chosen[0].name} for every part (none faster under another by more "
                             "than its cuts cost)")
        return None
    if chosen_sum + cuts_ms >= fastest_ms:
        cost = f" and their cuts about {cuts_ms:.4g} ms" if cuts_ms else ""
        entry["decision"] = (f"not mixed: the fastest parts add up to {chosen_sum:.4g} ms{cost}, the fastest "
                             f"candidate ran in {fastest_ms:.4g} ms")
        return None
    return _candidate(builder, graph, aten, tensors, settings, body, parts, chosen, compiled, entry)


def _runs_compiled(builder: PartBuilder, runs: List[List[int]], owners: List[Compiler]) -> List[CompiledPart]:
    """Each run of parts compiled by its owner, every compile started before any is waited for."""
    started = {}
    for owner in dict.fromkeys(owners):
        mine = [k for k, o in enumerate(owners) if o is owner]
        started[owner] = (mine, owner.start(builder, f"mix_{owner.label}", [runs[k] for k in mine],
                                            [f"mix run {k + 1} ({owner.name})" for k in mine]))
    made: List[Optional[CompiledPart]] = [None] * len(runs)
    for mine, wait in started.values():
        for k, part in zip(mine, wait()):
            made[k] = part
    return [m for m in made if m is not None]


def _candidate(builder: PartBuilder, graph: Dict[str, Any], aten: Program, tensors: List[torch.Tensor],
               settings: Settings, body: Dict[str, Any], parts: List[List[int]], chosen: List[Compiler],
               compiled: Optional[Dict[Compiler, List[CompiledPart]]], entry: Dict[str, Any]) -> Candidate:
    """The mix: each run of neighbouring parts of one compiler compiled by it as one part (where that
    fails and the parts were compiled one by one to be timed, those parts), the program planned over
    them."""
    runs, owners = _merged(parts, chosen)
    try:
        made = _runs_compiled(builder, runs, owners)
    except Exception as e:  # noqa: BLE001 - the parts as timed stand in for the runs, where there are any
        if compiled is None:
            entry["decision"] = f"not mixed: {why_of(e, 'the mix')}"
            return Candidate.failed("mix", e, kind="mix")
        why_of(e, "the mix's runs")
        runs, owners, made = parts, chosen, [compiled[c][i] for i, c in enumerate(chosen)]
    entry["decision"] = "mixed: " + ", ".join(owner.label for owner in owners)
    try:
        program = program_with_parts(builder, graph, aten.weights, tensors, settings, body, runs, made)
    except Exception as e:  # noqa: BLE001 - the candidate is out and the report says why
        return Candidate.failed("mix", e, kind="mix")
    return Candidate.of("mix", program, kind="mix")


__all__ = ["MIN_NAMED", "MIX_CUT", "MIX_CUT_MIN_MS", "MIX_GAP", "MIX_PARTS", "Pieces", "Whole", "cheapest_owners",
           "mixed", "mixing_compilers", "views_with_neighbours"]
