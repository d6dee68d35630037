"""The contest: the plan on ATen's kernels and the other candidates (candidates.py) checked against a
full-precision reference (check.py), timed side by side (timing.py) and the fastest kept, with the
report's "inductor" entry saying what was compiled, checked, timed and kept, and why."""
import math
import time
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import torch
from torch.export import ExportedProgram

from .aten_import import Imported
from .candidates import (JustInTime, NotAvailable, compile_before_search, compiles_before_search,
                         compiles_beside_search, described, inductor_candidates, program_with_parts, why_of)
from .check import RecordedWarnings, Reference, left_cuda_graph, reference_of, rounded
from .compilers import inductor as inductor_parts
from .compilers.inductor import PartBuilder
from . import plans
from .plans import Program
from .program_format import body_of
from .progress import progress
from .timing import RACE_MARGIN, time_callables


def plan_and_compile(decomposed: ExportedProgram, graph: Dict[str, Any], imported: "Imported",
                     weights: List[torch.Tensor], tensors: List[torch.Tensor], settings: Dict[str, Any],
                     fused: Optional[Tuple[Dict[str, Any], List[torch.Tensor]]] = None):
    """The plan of `graph` and, with option `inductor`, its Inductor candidates (_with_inductor_parts;
    where compiles_beside_search, the whole graph's compile starts before the search and runs beside it;
    where compiles_before_search, the whole graph's candidates are made first and the search's on-board
    verification waits until the plan on ATen's kernels could be kept). `fused` (fused_for_cudnn), where
    rewrites are measured, is planned the same way and competes with them.
    Returns the program, its weights, the report, whether rewrites are measured and whether Inductor
    parts were wanted."""
    device = torch.device(settings["device"])
    builder = inductor_parts.PartBuilder(decomposed, graph, imported.value_of, imported.weights, device,
                                         progress=progress)
    ready: Dict[str, Any] = {}
    try:
        if settings["inductor"] and compiles_beside_search(device):
            builder.compile_in_background(inductor_parts.every_node(graph), "whole part 1/1")
        elif settings["inductor"] and compiles_before_search(device, settings):
            ready = compile_before_search(builder, graph)
        # With candidates made first, the plan is verified on board only where it measures close to them
        # (_verified_if_close): the search alone times nothing on CPU, and runs while OpenVINO converts.
        planning = dict(settings, verify=0) if ready else settings
        program, report = plans.planned(graph, weights + tensors, planning)
        measure, compile_parts = settings["check_rewrites"], settings["inductor"]
        other_plans = {}
        if fused is not None and measure:
            fused_program, fused_report = plans.planned(fused[0], fused[1] + tensors, planning)
            other_plans["aten_cudnn"] = Program(fused_program, fused[1], fused_report, 0)
        if compile_parts or other_plans:
            program, weights, report = _with_inductor_parts(builder, graph, program, weights, tensors, settings,
                                                            report, measure, ready, other_plans, compile_parts)
        elif ready:  # planned without verification for candidates that are not wanted after all
            program, _, report, _ = plans.verified_plan(graph, weights, tensors, settings) or (program, None, report, 0)
    finally:
        builder.close()
    return program, weights, report, measure, compile_parts


def _with_inductor_parts(builder: PartBuilder, graph: Dict[str, Any], program: str,
                         weights: List[torch.Tensor], tensors: List[torch.Tensor], settings: Dict[str, Any],
                         report: Dict[str, Any], measure: bool,
                         ready: Optional[Dict[str, Any]] = None, other_plans: Optional[Dict[str, Any]] = None,
                         compile_parts: bool = True) -> Tuple[str, List[torch.Tensor], Dict[str, Any]]:
    """The plan with parts compiled by Inductor (compilers/inductor.py) where a candidate measures faster
    than the plan on ATen's kernels (`measure`; else the finest candidate is kept unmeasured). A
    candidate competes only with outputs close to the plan's in full float32 precision (_reference,
    _judged). The report's "inductor" entry says what was compiled, checked, timed and kept: each
    competing candidate's error and time ("candidates"), each other one's reason ("dropped"), the
    reference ("reference"), how the kept program runs (its entry's "streams" and "cuda_graph") and the
    warnings raised meanwhile ("warnings", shown as usual as well). A candidate compiled just in time
    (JustInTime) that measures fastest is packaged then (_packaged_winner). `ready`: candidates made
    before the search (compile_before_search). `other_plans`: other plans on ATen's kernels that compete
    ({name: (program, weights, report, 0)}: "aten_cudnn"); without `compile_parts` they alone compete
    with the plan."""
    start = time.perf_counter()
    candidates, errors, cached = inductor_candidates(builder, graph, program, weights, tensors, settings,
                                                     ready=ready) if compile_parts else ({}, {}, 0)
    candidates.update(other_plans or {})
    summary: Dict[str, Any] = {"compile_s": round(time.perf_counter() - start, 3), "cached_parts": cached,
                               "errors": errors, "candidates": {name: described(c) for name, c in candidates.items()}}
    dropped = {name: {"why": "not available" if isinstance(why, NotAvailable) else "not built", "detail": why}
               for name, why in errors.items()}
    not_available = sorted(name for name, why in errors.items() if isinstance(why, NotAvailable))
    if not_available:
        summary["not_available"] = not_available
    candidates["aten"] = Program(program, weights, report, 0)
    times: Dict[str, float] = {}
    with RecordedWarnings() as recorded:
        reference = _reference(candidates, tensors, graph, settings, recorded)
        summary["reference"] = reference.summary()
        summary["candidates"]["aten"] = {"error": summary["reference"]["user_error"]}
        for name, (error, why, bound) in _judged(candidates, tensors, graph, reference, recorded).items():
            if why:  # not kept, whatever its speed
                errors[name] = why
                failed = why.startswith(_RUN_FAILED)
                dropped[name] = {"why": "failed to run" if failed else "wrong output", "error": rounded(error),
                                 "bound": rounded(bound), "detail": why}
                del candidates[name]
                del summary["candidates"][name]
            else:
                summary["candidates"][name]["error"] = rounded(error)
        verified = not ready  # the ATen plan is verified on board where it could be kept (_verified_if_close)
        if measure and len(candidates) > 1:
            times = _time_candidates(candidates, tensors, graph)
            for name, ms in times.items():
                summary["candidates"].setdefault(name, {})["median_ms"] = round(ms, 4)
            if ready:
                verified = _verified_if_close(candidates, times, summary, graph, weights, tensors, settings)
            best = min(times, key=times.get)
            if isinstance(candidates[best], JustInTime):
                best = _packaged_winner(best, candidates, times, summary, builder, graph, program, weights, tensors,
                                        settings, reference, recorded)
        else:  # the finest packaged candidate
            best = next(name for name in ("plan", "whole", "aten")
                        if name in candidates and not isinstance(candidates[name], JustInTime))
        if best == "aten" and not verified:  # kept (the fastest or the only one): verification picks its plan
            candidates["aten"] = plans.verified_plan(graph, weights, tensors, settings) or candidates["aten"]
    summary["kept"] = best
    program, weights, chosen, _ = candidates[best]
    summary["candidates"][best].update(_how_it_runs(program, chosen, recorded.of(best)))
    summary["dropped"] = dict(dropped, **_not_kept(summary["candidates"], best, times))
    if recorded.caught:
        summary["warnings"] = recorded.listed()
    chosen = dict(chosen, inductor=summary)
    if best != "aten":  # what the user asked for, and the kept program's own measured time
        chosen["method"] = settings["method"]
        label = _LABELS.get(best, f"inductor {best}")
        chosen["chosen"] = label + (f" ({chosen['chosen']})" if chosen.get("chosen") else "")
        measured = summary["candidates"].get(best, {})
        if "median_ms" in measured:
            chosen["measured_ms"] = measured.get("packaged_ms", measured["median_ms"])
    for key in ("operators_before", "memory_bound_before"):
        chosen[key] = report.get(key, chosen.get(key))
    return program, weights, chosen


_LABELS = {"whole_openvino": "openvino whole", "aten_cudnn": "aten with cuDNN's fused conv+relu"}


def _how_it_runs(program: str, report: Dict[str, Any], messages: List[str]) -> Dict[str, Any]:
    """How the kept program runs, as its planner left it: the streams its schedule uses (the plan's
    report) and whether it replays a CUDA Graph (the program's own flag, off where a capture of it
    failed or was refused while it was checked and timed, `messages`)."""
    body = body_of(program)
    graph_mode = bool(body.get("cuda_graph")) and not left_cuda_graph(messages)
    return {"streams": report.get("streams"), "cuda_graph": graph_mode}


def _not_kept(competing: Dict[str, Dict[str, Any]], best: str, times: Dict[str, float]) -> Dict[str, Dict[str, Any]]:
    """Why each of the `competing` candidates (their report entries) other than `best` was not kept."""
    why: Dict[str, Dict[str, Any]] = {}
    for name, entry in competing.items():
        if name == best:
            continue
        if name not in times:
            why[name] = {"why": "not timed", "detail": "check_rewrites is off: the finest candidate is kept"}
        elif entry.get("packaged", "yes") != "yes":
            why[name] = {"why": "not packaged", "detail": entry["packaged"]}
        else:
            why[name] = {"why": "slower", "median_ms": entry["median_ms"]}
    return why


def _verified_if_close(candidates: Dict[str, Any], times: Dict[str, float], summary: Dict[str, Any],
                       graph: Dict[str, Any], weights: List[torch.Tensor], tensors: List[torch.Tensor],
                       settings: Dict[str, Any]) -> bool:
    """Where the plan on ATen's kernels was planned without on-board verification (the candidates were
    made before the search) and measures within RACE_MARGIN of the fastest compiled candidate (so it
    could be kept), it is verified now and timed once more beside that candidate (`candidates` and
    `times` updated); returns whether it was. Elsewhere verifying it would be slow for a plan that is
    not kept: on bert_base it times five schedules on ATen's kernels, which run far slower than the
    compiled candidates."""
    fastest = min((k for k in times if k != "aten"), key=times.get)
    if times["aten"] > times[fastest] * (1 + RACE_MARGIN):
        return False
    again_planned = plans.verified_plan(graph, weights, tensors, settings)
    if again_planned is None:
        return True  # the method does not verify: the plan is as it would be
    candidates["aten"] = again_planned
    again = _time_candidates({"aten": again_planned, fastest: candidates[fastest]}, tensors, graph)
    times.update(again)
    summary["candidates"]["aten"]["verified_ms"] = round(again["aten"], 4)
    summary["candidates"][fastest]["again_ms"] = round(again[fastest], 4)
    return True


def _packaged_winner(name: str, candidates: Dict[str, Any], times: Dict[str, float], summary: Dict[str, Any],
                     builder: PartBuilder, graph: Dict[str, Any], program: str, weights: List[torch.Tensor],
                     tensors: List[torch.Tensor], settings: Dict[str, Any], reference, recorded) -> str:
    """Which candidate to keep when `name`, compiled just in time, measured fastest: `name` packaged by
    AOTInductor (the same kernels) if that package, checked against `reference` (_judged, `recorded`
    as there) and timed once more side by side with the fastest packaged candidate, is faster; else
    that runner-up. A just-in-time lead under RACE_MARGIN keeps the runner-up without packaging: the
    package's own calls can take it back (rnntc_sru: just in time it led OpenVINO's, packaged it did
    not), and a package is slow to make."""
    entry = summary["candidates"][name]
    packaged = {k: ms for k, ms in times.items() if not isinstance(candidates[k], JustInTime)}
    runner_up = min(packaged, key=packaged.get)  # "aten" at least
    if times[name] >= packaged[runner_up] * (1 - RACE_MARGIN):
        entry["packaged"] = f"no: tied with {runner_up}"
        return runner_up
    jit = candidates[name]
    start = time.perf_counter()
    try:
        compiled = [builder.compile(jit.part, jit.label, freezing=jit.freezing)]
        body = body_of(program)
        candidates[name] = program_with_parts(builder, graph, weights, tensors, settings, body, [jit.part],
                                              compiled)
        error, why, _ = _judged({"aten": candidates["aten"], name: candidates[name]}, tensors, graph, reference,
                                recorded)[name]
        if why:
            raise ValueError(why)
        entry["packaged_error"] = rounded(error)
    except Exception as e:  # noqa: BLE001 - the runner-up is kept and the report says why
        entry["packaged"] = f"failed: {why_of(e, name + ' packaged')}"
        return runner_up
    finally:
        summary["compile_s"] = round(summary["compile_s"] + time.perf_counter() - start, 3)
    again = _time_candidates({k: candidates[k] for k in (runner_up, name)}, tensors, graph)
    entry["packaged"] = "yes"
    entry["packaged_ms"] = round(again[name], 4)
    summary["candidates"][runner_up]["again_ms"] = round(again[runner_up], 4)
    return name if again[name] < again[runner_up] else runner_up


def mismatch(got: Sequence[torch.Tensor], want: Sequence[torch.Tensor], what: str) -> Optional[str]:
    """How `got` differs from `want` (the outputs of `what`) beyond the float32 floor of each output's
    scale (candidate_check.floor_of; exactly, for integer outputs), or None when they agree."""
    return Reference(want).judge(got, what)[1]


def _call_of(candidate, graph: Optional[Dict[str, Any]], aten_weights: Optional[List[torch.Tensor]],
             tensors: List[torch.Tensor]) -> Callable[[], Any]:
    """A candidate as a call without arguments: a program run on its own weights and the user's
    `tensors`, or a JustInTime callable on its inputs among those of the ATen plan's program
    (`aten_weights`, then `tensors`), which `graph` places."""
    if isinstance(candidate, JustInTime):
        inputs = candidate.inputs(graph, aten_weights + tensors)
        return lambda: candidate.call(*inputs)
    program, passed = candidate.text, candidate.weights + tensors
    return lambda: torch.ops.autograph.execute(passed, program)


def _reference(candidates, tensors: List[torch.Tensor], graph: Dict[str, Any], settings: Dict[str, Any],
               recorded) -> Any:
    """What the candidates are judged against (candidate_check.Reference): the outputs of the plan on
    ATen's kernels ("aten") on the example inputs under the user's settings and, where those round
    float32 matmuls or convolutions on the device (TF32), the same graph run once more in full
    precision, planned one operator at a time without a CUDA Graph (a graph would replay the kernels
    captured under the user's settings). Timing keeps the user's settings. `recorded`: as _judged's."""
    program, weights = candidates["aten"].text, candidates["aten"].weights

    def in_full() -> List[torch.Tensor]:
        plain, _ = plans.planned(graph, weights + tensors, dict(settings, method="sequential", cuda_graph=False))
        with torch.no_grad():
            return list(torch.ops.autograph.execute(weights + tensors, plain))

    with torch.no_grad(), recorded.running("aten"):
        user = list(torch.ops.autograph.execute(weights + tensors, program))
    return reference_of(user, torch.device(settings["device"]), in_full)


_RUN_FAILED = "its run failed"


def _judged(candidates, tensors: List[torch.Tensor], graph: Dict[str, Any], reference,
            recorded) -> Dict[str, Tuple[float, Optional[str], Optional[float]]]:
    """Each candidate but "aten" run once on the example inputs (a JustInTime's outputs are some of
    the program's, which `graph` places) and judged against `reference` (_reference): {name: (largest
    error relative to each output's scale, why its outputs are wrong or None, the bound missed)}. A
    wrong candidate is not kept, whatever its speed. `recorded` (candidate_check.RecordedWarnings)
    gives each run's warnings to its candidate."""
    aten_weights = candidates["aten"].weights
    judged = {}
    with torch.no_grad():
        for name, candidate in candidates.items():
            if name == "aten":
                continue
            try:
                with recorded.running(name):
                    got = list(_call_of(candidate, graph, aten_weights, tensors)())
            except Exception as e:  # noqa: BLE001 - a package that does not load or run: dropped, the report says why
                judged[name] = (math.nan, f"{_RUN_FAILED}: {why_of(e, name)}", None)
                continue
            positions = ([graph["outputs"].index(v) for v in candidate.output_ids]
                         if isinstance(candidate, JustInTime) else None)
            judged[name] = reference.judge(got, "the plan", positions)
    return judged


def _time_candidates(candidates, tensors: List[torch.Tensor], graph: Dict[str, Any],
                     rounds: int = 10) -> Dict[str, float]:
    """Median ms of each candidate (a program, or a JustInTime callable on the inputs of the program
    `candidates["aten"]`), run in alternation on the device (time_callables)."""
    device = tensors[0].device if tensors else torch.device("cpu")
    aten_weights = candidates["aten"].weights if "aten" in candidates else None  # what a JustInTime reads
    calls = {name: _call_of(c, graph, aten_weights, tensors) for name, c in candidates.items()}
    return time_callables(calls, device, rounds)


__all__ = ["plan_and_compile", "mismatch"]
