"""The best compiler for every part: where several compilers' whole graphs compete (OpenVINO's, ONNX
Runtime's: those whose parts cost little beside their whole graph's compile, Compiler.mixes_parts), the
graph is cut into parts of about equal FLOPs, each part is compiled by each of them and timed alone on
its example inputs, and each part goes to the compiler that ran it fastest. Neighbouring parts of one
compiler become one part again (fewer calls, fusion across the cut). Where the fastest parts are not all
one compiler's and their times add up to less than the fastest candidate's, the mix is one more
candidate ("mix"), checked and timed as a whole like any other. The report's "mix" entry says each part's
time under each compiler and what was decided, and why."""
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import torch

from ..settings import Settings
from .candidate import Candidate, why_of
from .candidates import program_with_parts
from .compilers import COMPILERS, Compiler, compiler_on
from .parts import CompiledPart, PartBuilder, closed, cut_by_cost, part_costs, part_spec
from .plans import Program
from .program_format import body_of
from .timing import time_callables

# How many parts the graph is cut into for the mix: few, since each cut is a call and a fusion lost.
MIX_PARTS = 4
# Where the slower whole graph is more than this many times the faster one's, no part of it is tried: its
# parts would have to beat the faster compiler's by more than that on average. A bound to save the parts'
# compiles, not a measured one: on the models of bench/results/export-path-2026-11-28-cpu no mix within it
# was kept either.
MIX_GAP = 2.0
# Rounds per part and compiler (parts are timed one part at a time, alternating compilers).
_ROUNDS = 5


def mixing_compilers(candidates: Dict[str, Candidate], times: Dict[str, float], settings: Settings) -> List[Compiler]:
    """The compilers whose parts may mix: those with mixes_parts and option on, whose whole graph in
    float32 competes and was timed within MIX_GAP of the fastest of them."""
    whole: Dict[Compiler, float] = {}
    for name, c in candidates.items():
        if c.compiler is not None and c.compiler.mixes_parts and compiler_on(c.compiler, settings) \
                and c.kind == "whole" and not c.lowered and c.competing and name in times:
            whole[c.compiler] = min(times[name], whole.get(c.compiler, float("inf")))
    if len(whole) < 2:
        return []
    fastest = min(whole.values())
    near = [c for c in COMPILERS if c in whole and whole[c] <= fastest * MIX_GAP]
    return near if len(near) >= 2 else []


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


def mixed(builder: PartBuilder, graph: Dict[str, Any], aten: Program, tensors: List[torch.Tensor],
          settings: Settings, compilers: List[Compiler], fastest_ms: float,
          entry: Dict[str, Any]) -> Optional[Candidate]:
    """The candidate "mix" of `compilers`' parts (module docstring), or None where no mix could beat the
    fastest candidate (`fastest_ms`); `entry` (the report's "mix") gets each part's nodes, FLOPs and time
    under each compiler, each part's fastest compiler, and the decision."""
    body = body_of(aten.text)
    parts = closed(graph, cut_by_cost(graph, body, MIX_PARTS))
    entry["compilers"] = [c.name for c in compilers]
    if len(parts) < 2:
        entry["decision"] = "not mixed: the graph is too small to cut into parts"
        return None
    compiled = _compiled(compilers, builder, parts)
    failed = {c.name: why_of(e, f"mix parts of {c.name}") for c, e in compiled.items() if isinstance(e, Exception)}
    if failed:
        entry["errors"] = failed
    compiled = {c: made for c, made in compiled.items() if not isinstance(made, Exception)}
    if len(compiled) < 2:
        entry["decision"] = "not mixed: fewer than two compilers built the parts"
        return None
    times = _timed_parts(compiled, builder, body, parts)
    by_label = {c.label: c for c in compiled}
    chosen = [by_label[min(t, key=t.get)] for t in times]
    entry["parts"] = [{"nodes": len(part), "flops": part_costs(body, part)[0],
                       "ms": {label: round(ms, 4) for label, ms in t.items()}, "fastest": owner.label}
                      for part, t, owner in zip(parts, times, chosen)]
    best_sum = sum(min(t.values()) for t in times)
    entry["fastest_parts_ms"] = round(best_sum, 4)
    if len({id(c) for c in chosen}) == 1:
        entry["decision"] = f"not mixed: {chosen[0].name}'s part was the fastest on every part"
        return None
    if best_sum >= fastest_ms:
        entry["decision"] = (f"not mixed: the fastest parts add up to {best_sum:.4g} ms, the fastest candidate "
                             f"ran in {fastest_ms:.4g} ms")
        return None
    return _candidate(builder, graph, aten, tensors, settings, body, parts, chosen, compiled, entry)


def _candidate(builder: PartBuilder, graph: Dict[str, Any], aten: Program, tensors: List[torch.Tensor],
               settings: Settings, body: Dict[str, Any], parts: List[List[int]], chosen: List[Compiler],
               compiled: Dict[Compiler, List[CompiledPart]], entry: Dict[str, Any]) -> Candidate:
    """The mix: each run of neighbouring parts of one compiler compiled by it as one part (the parts as
    they were timed where that fails), the program planned over them."""
    merged, owners = _merged(parts, chosen)
    made: List[CompiledPart] = []
    for k, (part, owner) in enumerate(zip(merged, owners)):
        single = [i for i, p in enumerate(parts) if p == part]
        if single:
            made.append(compiled[owner][single[0]])
            continue
        try:
            made.append(owner.start(builder, f"mix_{owner.label}", [part], [f"mix run {k + 1} ({owner.name})"])()[0])
        except Exception as e:  # noqa: BLE001 - the parts as timed stand in for the run
            why_of(e, f"mix run {k + 1}")
            merged, owners, made = parts, chosen, [compiled[c][i] for i, c in enumerate(chosen)]
            break
    entry["decision"] = "mixed: " + ", ".join(owner.label for owner in owners)
    try:
        program = program_with_parts(builder, graph, aten.weights, tensors, settings, body, merged, made)
    except Exception as e:  # noqa: BLE001 - the candidate is out and the report says why
        return Candidate.failed("mix", e, kind="mix")
    return Candidate.of("mix", program, kind="mix")


__all__ = ["MIX_GAP", "MIX_PARTS", "mixed", "mixing_compilers"]
