"""The contest: the plan on ATen's kernels and the other candidates (candidates.py) checked against a
full-precision reference (check.py), timed side by side (timing.py) and the fastest kept, with the
report's "contest" entry saying what was compiled, checked, timed and kept, and why (also readable as
"inductor", its name before other compilers joined: kept for a while, documented)."""
import math
import time
from typing import Any, Dict, List, Optional, Sequence, Set, Tuple

import torch
from torch.export import ExportedProgram

from .aten_import import Imported
from .candidate import Candidate, why_of
from .candidates import (OtherGraph, compile_before_search, compiles_before_search, compiles_beside_search,
                         compiled_candidates, offers_tf32, program_with_parts, tf32_twins)
from .check import RecordedWarnings, Reference, left_cuda_graph, reference_of, rounded
from .kept_precision import float32_at_a_tie, precision_entry
from .measure import measured, name_of
from ..errors import InputError
from ..settings import Settings
from .compilers import COMPILERS, Compiler, compiler_on, just_in_time_packager
from .parts import PartBuilder
from . import lowering, mixing, plans
from .plans import Program
from .program_format import body_of
from .progress import progress
from .timing import RACE_MARGIN, time_callables


def plan_and_compile(decomposed: ExportedProgram, graph: Dict[str, Any], imported: "Imported",
                     weights: List[torch.Tensor], tensors: List[torch.Tensor], settings: Settings,
                     others: Optional[Dict[str, OtherGraph]] = None,
                     calibration: Sequence[List[torch.Tensor]] = ()):
    """The plan of `graph` and, with any compiler's option on (inductor, openvino, onnxruntime), its compiled
    candidates (_with_compiled_parts; where compiles_beside_search, the whole graph's Inductor compile
    starts before the search and runs beside it;
    where compiles_before_search, the whole graph's candidates are made first and the plan on ATen's
    kernels competes planned one operator at a time, searched for only where it could win:
    Contest._searched_if_it_could_win). Each of `others` (candidates.other_graphs: "aten_cudnn",
    "aten_bf16"...) is planned the same way and competes with them. `calibration`: more inputs (flat tensor lists, on the
    device) on which a lowered candidate must meet option tolerance too.
    Returns the program, its weights, the report, whether rewrites are measured and whether Inductor
    parts were wanted (option inductor: a package for every shape is Inductor's)."""
    device = torch.device(settings.device)
    builder = PartBuilder(decomposed, graph, imported.value_of, imported.weights, device, progress=progress)
    builder.calibration = [list(inputs) for inputs in calibration]
    builder.example = list(tensors)
    builder.aim = (settings.accuracy, settings.tolerance) if isinstance(settings.accuracy, str) else None
    compile_parts = any(compiler_on(compiler, settings) for compiler in COMPILERS)
    ready: Dict[str, Any] = {}
    try:
        if compile_parts and compiles_beside_search(device):
            for compiler in COMPILERS:
                if compiler_on(compiler, settings) and compiler.missing() is None:
                    compiler.beside_search(builder, graph, settings)
        elif compile_parts and compiles_before_search(device, settings):
            ready = compile_before_search(builder, graph, settings)
        # With candidates made first, the plan on ATen's kernels stands in planned one operator at a time;
        # the search runs only where its plan could be kept (Contest._searched_if_it_could_win).
        deferred = bool(ready) and settings.method == "autograph"
        planning = plans.replaced(settings, method="sequential") if deferred else settings
        program, report = plans.plan(graph, weights + tensors, planning)
        measure = settings.check_rewrites
        other_plans = _other_plans(others or {}, tensors, planning)
        # Below fp32 the contest runs also without compiled candidates: it offers the TF32 twins and says
        # what was lowered, or why nothing was.
        if compile_parts or other_plans or settings.precision != "fp32":
            program, weights, report = _with_compiled_parts(builder, graph, program, weights, tensors, settings,
                                                            report, measure, ready, other_plans, compile_parts,
                                                            deferred, calibration)
        elif deferred:  # planned for candidates that are not wanted after all
            program, report = plans.plan(graph, weights + tensors, settings)
    finally:
        builder.close()
    return program, weights, report, measure, settings.inductor


def _other_plans(others: Dict[str, OtherGraph], tensors: List[torch.Tensor],
                 settings: Settings) -> Dict[str, Candidate]:
    """Each of `others` planned with `settings` as a candidate of its name (out, with why, where it could
    not be made or planned)."""
    made = {}
    for name, other in others.items():
        kind = "aten" if other.precision != "fp32" else name  # "aten_bf16": the plan on ATen's kernels, lowered
        if other.error is not None:
            made[name] = Candidate.failed(name, other.error, precision=other.precision, kind=kind)
            continue
        try:
            program, report = plans.plan(other.graph, other.weights + tensors, settings)
            made[name] = Candidate.of(name, Program(program, other.weights, report, 0), other.precision, kind=kind)
        except Exception as e:  # noqa: BLE001 - the candidate is out and the report says why
            made[name] = Candidate.failed(name, e, precision=other.precision, kind=kind)
    return made


def _with_compiled_parts(builder: PartBuilder, graph: Dict[str, Any], program: str,
                         weights: List[torch.Tensor], tensors: List[torch.Tensor], settings: Settings,
                         report: Dict[str, Any], measure: bool,
                         ready: Optional[Dict[str, Any]] = None, other_plans: Optional[Dict[str, Candidate]] = None,
                         compile_parts: bool = True, deferred: bool = False,
                         calibration: Sequence[List[torch.Tensor]] = ()
                         ) -> Tuple[str, List[torch.Tensor], Dict[str, Any]]:
    """The plan with parts compiled by the compilers (compilers/: Inductor's, OpenVINO's, ONNX Runtime's) where a
    candidate measures faster than the plan on ATen's kernels (`measure`; else the finest candidate is
    kept unmeasured): the candidates are built (compiled_candidates), then compete (Contest.compete).
    The report's "contest" entry says what was compiled, checked, timed and kept (Contest.summary) and
    the rejected candidates' loaded packages are released. `ready`: candidates made before the search
    (compile_before_search). `other_plans`: other plans on ATen's kernels that compete ({name: Candidate}:
    "aten_cudnn", "aten_bf16"...); without `compile_parts` they alone compete with the plan. `deferred`: `program` stands
    in for the plan the settings ask for (planned one operator at a time), which is made only where it
    could be kept."""
    start = time.perf_counter()
    candidates, cached = compiled_candidates(builder, graph, program, weights, tensors, settings,
                                             ready=ready) if compile_parts else ({}, 0)
    compile_s = time.perf_counter() - start
    candidates.update(other_plans or {})
    candidates["aten"] = Candidate.of("aten", Program(program, weights, report, 0))
    if offers_tf32(torch.device(settings.device), settings):
        candidates.update(tf32_twins(candidates))
    with RecordedWarnings() as recorded:
        contest = Contest(builder, graph, tensors, settings, recorded, calibration)
        best = contest.compete(candidates, measure, deferred)
    summary = contest.summary(candidates, best, round(compile_s + contest.compile_s, 3), cached)
    _release_rejected(candidates, best, contest.loaded)
    kept = candidates[best].package
    program, weights, chosen = kept.text, kept.weights, kept.report
    # "inductor": the entry's name before other compilers joined, kept readable for a while (docs/export_path.md).
    chosen = dict(chosen, contest=summary, inductor=summary)
    if "precision" in summary:
        chosen["precision"] = summary["precision"]
    if best != "aten":  # what the user asked for, and the kept program's own measured time
        chosen["method"] = settings.method
        label = candidates[best].label
        chosen["chosen"] = label + (f" ({chosen['chosen']})" if chosen.get("chosen") else "")
        measured = summary["candidates"].get(best, {})
        if "median_ms" in measured:
            chosen["measured_ms"] = measured.get("packaged_ms", measured["median_ms"])
    for key in ("operators_before", "memory_bound_before"):
        chosen[key] = report.get(key, chosen.get(key))
    return program, weights, chosen


# How much faster the search (method autograph, verified on board) made a plan on ATen's kernels than the
# same graph run one operator at a time, at most over the zoo on a CPU (bench/results/search-gain-2026-11-27-cpu),
# with room to spare. A plan one operator at a time slower than a compiled candidate by more than this cannot
# be made to win by the search (Contest._searched_if_it_could_win).
SEARCH_GAIN_BOUND = 1.5
# Why a candidate that ran right was not kept: it still has its entry among the report's candidates.
_LOST = ("slower", "not timed", "not packaged", "no faster")


def _release_rejected(candidates: Dict[str, Candidate], best: str, loaded: Set[str]) -> None:
    """Releases the packages that the candidates other than `best` loaded while they were checked and
    timed, those loaded while a candidate was made (its `tried`: lowering by parts) and those loaded while
    the contest decided (`loaded`: the mix's parts timed alone) (the runners keep what they load for the
    process's life); a part the kept program calls too stays."""
    rejected = set().union(*(c.part_digests() for name, c in candidates.items() if name != best),
                           *(c.tried for c in candidates.values()), loaded)
    rejected -= candidates[best].part_digests()
    if rejected:
        torch.ops.autograph.release_compiled_parts(sorted(rejected))


class Contest:
    """The candidates of one graph checked against a full-precision reference (check.py), timed side by
    side (timing.py) and the fastest kept (compete); the report's "contest" entry made from them
    (summary). `builder` packages a candidate compiled just in time that wins; `recorded`
    (check.RecordedWarnings) gives each run's warnings to its candidate; `calibration`: more inputs on
    which a lowered candidate must meet option tolerance."""

    def __init__(self, builder: PartBuilder, graph: Dict[str, Any], tensors: List[torch.Tensor],
                 settings: Settings, recorded: RecordedWarnings, calibration: Sequence[List[torch.Tensor]] = ()):
        self.builder, self.graph, self.tensors, self.settings = builder, graph, tensors, settings
        self.recorded, self.calibration = recorded, list(calibration)
        self._aten: Optional[Program] = None  # the plan on ATen's kernels the references come from
        self._references: Dict[int, Reference] = {}  # its reference on each calibration input
        self.reference: Optional[Reference] = None
        self.compile_s = 0.0  # spent packaging a winner compiled just in time
        self.timed: Dict[str, float] = {}
        self._no_faster: Dict[str, str] = {}  # a lowered candidate not kept at a tie with float32, and why
        self.skipped: Dict[str, str] = {}  # work not done, and why
        self.mix: Optional[Dict[str, Any]] = None  # the report's "mix" entry (_mixed), where parts were mixed
        self.loaded: Set[str] = set()  # digests of packages loaded while deciding (the mix's parts timed alone)

    def compete(self, candidates: Dict[str, Candidate], measure: bool, deferred: bool) -> str:
        """The name of the candidate kept among `candidates` ("aten" among them, the plan on ATen's
        kernels): those whose outputs miss the reference's bound, or whose run fails, are out, whatever
        their speed; with `measure` the rest are timed side by side and the fastest kept (a just-in-time
        winner packaged first, _packaged_winner), else the finest packaged one. `deferred`: "aten" stands
        in for the plan the settings ask for, which is made where it could win
        (_searched_if_it_could_win) or is kept. Each candidate's entry and `out` say what happened to it."""
        aten = candidates["aten"]
        self._aten, self._references = aten.package, {}  # the stand-in's references on calibration inputs
        self.reference = self._reference(aten.package)
        aten.entry["error"] = self.reference.summary()["user_error"]
        self._check([c for name, c in candidates.items() if name != "aten" and c.competing], aten.package.weights)
        if measure:
            candidates.update(self._lowered_by_parts(candidates))
        competing = {name: c for name, c in candidates.items() if c.competing}
        if measure and len(competing) > 1:
            self.timed = self._time(competing)
            for name, ms in self.timed.items():
                competing[name].entry["median_ms"] = round(ms, 4)
            self._mixed(candidates, competing)
            if deferred:
                deferred = not self._searched_if_it_could_win(competing)
            best, self._no_faster = float32_at_a_tie(min(self.timed, key=self.timed.get), competing, self.timed)
            if competing[best].package is None:
                best = self._packaged_winner(best, competing)
                self._no_faster.pop(best, None)  # the float32 one failed to package: the runner-up is kept
        else:  # the finest packaged candidate
            best = next(name for name in ("plan", "whole", "aten") if name in competing and competing[name].package)
        if best == "aten" and deferred:  # kept (the fastest or the only one): planned as the settings ask
            aten.built = self._planned_as_asked(aten.package)
            self.skipped.pop("search", None)
        for name, candidate in competing.items():
            if name != best:
                self._lost(candidate)
        return best

    def summary(self, candidates: Dict[str, Candidate], best: str, compile_s: float, cached: int) -> Dict[str, Any]:
        """The report's "contest" entry: the build's cost, each candidate that ran right with its error
        and time ("candidates"), each other one's reason ("dropped", "errors"), the reference, the kept
        one and how it runs (its entry's "streams" and "cuda_graph"), the warnings raised meanwhile."""
        summary: Dict[str, Any] = {
            "compile_s": compile_s, "cached_parts": cached,
            "errors": {name: c.error for name, c in candidates.items() if c.error},
            "candidates": {name: c.entry for name, c in candidates.items() if c.competing or c.out["why"] in _LOST}}
        not_available = sorted(name for name, c in candidates.items() if c.out and c.out["why"] == "not available")
        if not_available:
            summary["not_available"] = not_available
        summary["reference"] = self.reference.summary()
        summary["kept"] = best
        kept = candidates[best].package
        summary["candidates"][best].update(_how_it_runs(kept.text, kept.report, self.recorded.of(best)))
        summary["dropped"] = {name: c.out for name, c in candidates.items() if not c.competing}
        if self.settings.precision != "fp32":
            summary["precision"] = precision_entry(candidates, best, self.settings, len(self.calibration),
                                                   lambda c: c.competing or c.out["why"] in _LOST, self._no_faster)
        if self.skipped:
            summary["skipped"] = dict(self.skipped)
        if self.mix is not None:
            summary["mix"] = self.mix
        if self.recorded.caught:
            summary["warnings"] = self.recorded.listed()
        return summary

    def _lost(self, candidate: Candidate) -> None:
        """Why `candidate`, which ran right, was not kept."""
        if candidate.name in self._no_faster:
            candidate.drop("no faster", self._no_faster[candidate.name], median_ms=candidate.entry["median_ms"])
        elif candidate.name not in self.timed:
            candidate.drop("not timed", "check_rewrites is off: the finest candidate is kept")
        elif candidate.entry.get("packaged", "yes") != "yes":
            candidate.drop("not packaged", candidate.entry["packaged"])
        else:
            candidate.drop("slower", median_ms=candidate.entry["median_ms"])

    def _reference(self, aten: Program, inputs: Optional[List[torch.Tensor]] = None) -> Reference:
        """What the candidates are judged against (check.Reference): the outputs of the plan on ATen's
        kernels on the example inputs (or `inputs`) under the user's settings and, where those round float32
        matmuls or convolutions on the device (TF32), the same graph run once more in full precision,
        planned one operator at a time without a CUDA Graph (a graph would replay the kernels captured
        under the user's settings). Timing keeps the user's settings."""
        graph, settings, tensors = self.graph, self.settings, self.tensors if inputs is None else inputs
        full = plans.replaced(settings, method="sequential", cuda_graph=False)

        def in_full() -> List[torch.Tensor]:
            plain, _ = plans.plan(graph, aten.weights + tensors, full)
            with torch.no_grad():
                return list(torch.ops.autograph.execute(aten.weights + tensors, plain))

        with torch.no_grad(), self.recorded.running("aten"):
            user = list(torch.ops.autograph.execute(aten.weights + tensors, aten.text))
        return reference_of(user, torch.device(settings.device), in_full)

    def _check(self, candidates: List[Candidate], aten_weights: List[torch.Tensor]) -> None:
        """Each of `candidates` run once on the example inputs and judged against the reference (judged): one
        whose run fails or whose outputs miss the bound is out (`fail`), the others' entries get their
        error relative to each output's scale."""
        for candidate in candidates:
            try:
                error, why, bound = self.judged(candidate, aten_weights)
            except InputError:  # the user's measure failed, not the candidate
                raise
            except Exception as e:  # noqa: BLE001 - a package that does not load or run: out, the report says why
                candidate.fail("failed to run", f"{_RUN_FAILED}: {why_of(e, candidate.name)}", error=None, bound=None)
                continue
            if why:
                candidate.fail("beyond tolerance" if candidate.lowered else "wrong output", why,
                               error=rounded(error), bound=rounded(bound))
            else:
                candidate.entry["error"] = rounded(error)

    def judged(self, candidate: Candidate, aten_weights: Optional[List[torch.Tensor]] = None
               ) -> Tuple[float, Optional[str], Optional[float]]:
        """`candidate` run on the example inputs and judged against the reference (a lowered one against
        option tolerance, on the calibration inputs too: _calibrated): (its error relative to each
        output's scale, why it misses the bound or None, the bound). Raises what its run raises."""
        aten_weights = self._aten.weights if aten_weights is None else aten_weights
        with torch.no_grad():
            with self.recorded.running(candidate.name):
                got = list(candidate.call(self.graph, aten_weights, self.tensors)())
            if candidate.lowered and self.settings.accuracy != "max_error":
                return self._measured(candidate, aten_weights, got)
            tolerance = self.settings.tolerance if candidate.lowered else None
            error, why, bound = self.reference.judge(got, "the plan", candidate.output_positions(self.graph),
                                                     tolerance)
            if candidate.lowered:
                candidate.entry["measured"] = [rounded(error)]
            if not why and candidate.lowered and self.calibration:
                error, why, bound = self._calibrated(candidate, aten_weights, error)
        return error, why, bound

    def _lowered_by_parts(self, candidates: Dict[str, Candidate]) -> Dict[str, Candidate]:
        """For each whole-graph candidate lowered below float32 that missed the tolerance, "parts_..." in
        its place: the graph cut into parts, lowered part by part where the tolerance holds
        (lowering.lowered_by_parts; its judge is `judged`). Only the compiler's first way of lowering (no
        variant) is, and only where none of its other ways met the tolerance: its parts would be tried again
        to the same end, or to a slower one than a whole graph met."""
        made = {}
        for name, c in candidates.items():
            missed = c.out is not None and c.out["why"] == "beyond tolerance"
            if not (missed and c.compiler is not None and c.compiler.lowers_by_parts and c.entry.get("parts") == 1
                    and not c.variant):
                continue
            by_parts = f"parts_{c.compiler.label}_{c.precision}"
            if any(o.competing and o.compiler is c.compiler and o.kind == c.kind and o.precision == c.precision
                   for o in candidates.values()):
                self.skipped[by_parts] = "another way of lowering met the tolerance"
                continue
            start = time.perf_counter()
            # Unraced: raced against a much faster int8 program, float32's whole graph would leave after its
            # first, coldest run (an 81 ms sample where its median is 42 ms on a resnet50).
            steps, timed, estimates = lowering.faster_ladder(candidates, c, self.builder,
                                                             lambda timed: self._time(timed, race=False))
            if steps:
                made[by_parts] = lowering.lowered_by_parts(by_parts, c.compiler, c.precision, self.builder,
                                                           self.graph, self._aten, self.tensors, self.settings,
                                                           self.judged, steps=steps,
                                                           whole=lowering.whole_pair(candidates, c),
                                                           estimates=estimates)
            else:
                made[by_parts] = Candidate(by_parts, precision=c.precision, compiler=c.compiler, kind="parts")
                made[by_parts].drop("not faster", f"no precision of {c.compiler.name}'s below float32 ran its whole "
                                    "graph faster than float32, and its profiles could not say which parts "
                                    "would", ladder=timed)
            spent = time.perf_counter() - start
            made[by_parts].entry["lowered_s"] = round(spent, 3)
            if timed:  # in its entry, and where it is out, in the report's word on why
                made[by_parts].entry["ladder"] = timed
                if made[by_parts].out is not None:
                    made[by_parts].out.setdefault("ladder", timed)
            self.compile_s += spent
        return made

    def _mixed(self, candidates: Dict[str, Candidate], competing: Dict[str, Candidate]) -> None:
        """Where several compilers' whole graphs compete (mixing.mixing_compilers), the best compiler for
        every part (mixing.mixed): the mix, where one is made, checked and timed side by side with the
        fastest candidate, and competing with its time from that run. The candidates' compiled parts are let
        go after (their programs hold the packages)."""
        compilers = mixing.mixing_compilers(candidates, self.timed, self.settings)
        try:
            self._mix(candidates, competing, compilers)
        finally:
            for candidate in candidates.values():
                candidate.compiled = []

    def _mix(self, candidates: Dict[str, Candidate], competing: Dict[str, Candidate],
             compilers: Dict[Compiler, mixing.Whole]) -> None:
        if not compilers:
            return
        fastest = min(self.timed, key=self.timed.get)
        self.mix = {}
        start = time.perf_counter()
        try:
            mix = mixing.mixed(self.builder, self.graph, self._aten, self.tensors, self.settings, compilers,
                               self.timed[fastest], self.mix, self.loaded)
        except Exception as e:  # noqa: BLE001 - no mix; the report says why
            self.mix["decision"] = f"not mixed: {why_of(e, 'the mix')}"
            mix = None
        finally:
            spent = time.perf_counter() - start
            self.mix["mix_s"] = round(spent, 3)
            self.compile_s += spent
        if mix is None:
            return
        candidates["mix"] = mix
        if mix.competing:
            self._check([mix], self._aten.weights)
        if not mix.competing:
            return
        self._timed_beside("mix", mix, fastest, competing)
        competing["mix"] = mix

    def _timed_beside(self, name: str, candidate: Candidate, fastest: str, competing: Dict[str, Candidate]) -> None:
        """`candidate`, made after the first timing, timed side by side with the fastest candidate then,
        `fastest`, and its time put on the first timing's scale (that ratio times the fastest's first
        time): the other candidates are compared with it by that scale, and this machine's speed drifts
        between two runs by more than the margins the contest decides by. The entry's "against" says what
        the second run measured."""
        again = self._time({fastest: competing[fastest], name: candidate})
        self.timed[name] = self.timed[fastest] * again[name] / again[fastest]
        candidate.entry["median_ms"] = round(self.timed[name], 4)
        candidate.entry["against"] = {"candidate": fastest, "ms": round(again[fastest], 4),
                                      "own_ms": round(again[name], 4)}

    def _calibrated(self, candidate: Candidate, aten_weights: List[torch.Tensor],
                    error: float) -> Tuple[float, Optional[str], Optional[float]]:
        """`candidate` (lowered; within the tolerance on the example inputs, `error`) judged on each
        calibration input as on the example's, against the plan on ATen's kernels run there in full
        precision: (its largest error over all of them, why it is beyond the tolerance or None, the bound)."""
        worst: Tuple[float, Optional[str], Optional[float]] = (error, None, None)
        for k, inputs in enumerate(self.calibration):
            reference = self._reference_on(k)
            with torch.no_grad(), self.recorded.running(candidate.name):
                got = list(candidate.call(self.graph, aten_weights, inputs)())
            judged = reference.judge(got, f"the plan on calibration input {k}", candidate.output_positions(self.graph),
                                     self.settings.tolerance)
            candidate.entry["measured"].append(rounded(judged[0]))
            if judged[1]:
                return judged
            worst = (max(worst[0], judged[0]), None, None)
        candidate.entry["calibration_inputs"] = len(self.calibration)
        return worst

    def _reference_on(self, k: int) -> Reference:
        """The reference on calibration input k (made on first use)."""
        if k not in self._references:
            self._references[k] = self._reference(self._aten, self.calibration[k])
        return self._references[k]

    def _measured(self, candidate: Candidate, aten_weights: List[torch.Tensor],
                  got: List[torch.Tensor]) -> Tuple[float, Optional[str], Optional[float]]:
        """`candidate` (lowered; `got`: its outputs on the example inputs) judged by option accuracy over the
        example and every calibration input together, against the plan in full precision: (the measure's
        loss, why it is beyond option tolerance or None, the tolerance). Its entry's "measured" lists the
        loss on each judged input."""
        positions = candidate.output_positions(self.graph)
        positions = range(len(self.reference.outputs)) if positions is None else positions
        # Shapes and dtypes as the plan's, integer outputs exact, whatever the measure makes of the rest.
        _, why, bound = self.reference.judge(got, "the plan", positions, tolerance=math.inf)
        if why:
            return math.inf, why, bound
        outputs, references = [got], [[self.reference.outputs[p] for p in positions]]
        for k, inputs in enumerate(self.calibration):
            with torch.no_grad(), self.recorded.running(candidate.name):
                outputs.append(list(candidate.call(self.graph, aten_weights, inputs)()))
            references.append([self._reference_on(k).outputs[p] for p in positions])
        loss, per_input = measured(self.settings.accuracy, outputs, references)
        candidate.entry["measured"] = [rounded(v) for v in per_input]
        tolerance = self.settings.tolerance
        if not loss <= tolerance:  # also NaN
            return loss, (f"its outputs are {loss:.3g} from the plan's by accuracy measure {name_of(self.settings.accuracy)} "
                          f"over {len(per_input)} judged inputs (tolerance {tolerance:g})"), tolerance
        candidate.entry["calibration_inputs"] = len(self.calibration)
        return loss, None, tolerance

    def _time(self, candidates: Dict[str, Candidate], race: bool = True) -> Dict[str, float]:
        self.builder.before_timing()  # nothing started in case it was needed takes the cores timed
        return _time_candidates(candidates, self.tensors, self.graph, 10 if race else _UNRACED_ROUNDS,
                                aten_weights=self._aten.weights, race=race)

    def _searched_if_it_could_win(self, competing: Dict[str, Candidate]) -> bool:
        """Where the plan on ATen's kernels stands in planned one operator at a time (the candidates were
        made before the search), the plan the settings ask for (the search, verified on board) is made
        and timed once more beside the fastest compiled candidate only where it could win: where the
        stand-in, made SEARCH_GAIN_BOUND times faster, comes within RACE_MARGIN of that candidate.
        Elsewhere the search is skipped (self.skipped says why): it cannot win, and on a graph as
        large as bert_base's its on-board verification times several schedules on ATen's kernels.
        Returns whether the plan was made."""
        times = self.timed
        fastest = min((k for k in times if k != "aten"), key=times.get)
        if times["aten"] / SEARCH_GAIN_BOUND > times[fastest] * (1 + RACE_MARGIN):
            self.skipped["search"] = (
                f"the plan on ATen's kernels one operator at a time measured {times['aten']:.4g} ms, "
                f"{times['aten'] / times[fastest]:.3g}x {fastest}'s {times[fastest]:.4g} ms; the search has made such "
                f"plans at most {SEARCH_GAIN_BOUND}x faster, so its plan could not be kept")
            return False
        aten = competing["aten"]
        aten.built = self._planned_as_asked(aten.package)
        aten.entry["stand_in_ms"] = aten.entry["median_ms"]  # planned one operator at a time
        self._timed_beside("aten", aten, fastest, competing)
        aten.entry["searched_ms"] = aten.entry["median_ms"]
        return True

    def _planned_as_asked(self, stand_in: Program) -> Program:
        """The plan on ATen's kernels as the settings ask (the search, verified on board), in place of
        `stand_in` (planned one operator at a time)."""
        program, report = plans.plan(self.graph, stand_in.weights + self.tensors, self.settings)
        return Program(program, stand_in.weights, report, 0)

    def _packaged_winner(self, name: str, competing: Dict[str, Candidate]) -> str:
        """Which candidate to keep when `name`, compiled just in time, measured fastest: `name` packaged by
        AOTInductor (the same kernels) if that package, checked against the reference and timed once
        more side by side with the fastest packaged candidate, is faster; else that runner-up. A lead
        under RACE_MARGIN is packaged too, though a package is slow to make: the package's own calls can
        take a lead back (rnntc_sru: just in time it led OpenVINO's, packaged it did not) or widen it
        (bert_base: level with OpenVINO's in the contest, well ahead of it beside a benchmark's other
        methods), and only the packages side by side can tell."""
        jit = competing[name]
        entry, times = jit.entry, self.timed
        packaged = {k: ms for k, ms in times.items() if competing[k].package is not None}
        runner_up = min(packaged, key=packaged.get)  # "aten" at least
        part = jit.built
        start = time.perf_counter()
        try:
            compiled = [just_in_time_packager().package_just_in_time(self.builder, part)]
            aten = competing["aten"].package
            body = body_of(aten.text)
            built = program_with_parts(self.builder, self.graph, aten.weights, self.tensors, self.settings, body,
                                       [part.part], compiled)
            with torch.no_grad(), self.recorded.running(name):
                got = list(Candidate.of(name, built).call(self.graph, [], self.tensors)())
            # The same kernels as the just-in-time candidate's: the bound it was judged against.
            tolerance = self.settings.tolerance if jit.lowered else None
            error, why, _ = self.reference.judge(got, "the plan", tolerance=tolerance)
            if why:
                raise ValueError(why)
            jit.built = built
            entry["packaged_error"] = rounded(error)
        except Exception as e:  # noqa: BLE001 - the runner-up is kept and the report says why
            entry["packaged"] = f"failed: {why_of(e, name + ' packaged')}"
            return runner_up
        finally:
            self.compile_s += time.perf_counter() - start
        again = self._time({k: competing[k] for k in (runner_up, name)})
        entry["packaged"] = "yes"
        entry["packaged_ms"] = round(again[name], 4)
        competing[runner_up].entry["again_ms"] = round(again[runner_up], 4)
        return name if again[name] < again[runner_up] else runner_up


def _how_it_runs(program: str, report: Dict[str, Any], messages: List[str]) -> Dict[str, Any]:
    """How the kept program runs, as its planner left it: the streams its schedule uses (the plan's
    report) and whether it replays a CUDA Graph (the program's own flag, off where a capture of it
    failed or was refused while it was checked and timed, `messages`)."""
    body = body_of(program)
    graph_mode = bool(body.get("cuda_graph")) and not left_cuda_graph(messages)
    return {"streams": report.get("streams"), "cuda_graph": graph_mode}


def mismatch(got: Sequence[torch.Tensor], want: Sequence[torch.Tensor], what: str) -> Optional[str]:
    """How `got` differs from `want` (the outputs of `what`) beyond the float32 floor of each output's
    scale (check.floor_of; exactly, for integer outputs), or None when they agree."""
    return Reference(want).judge(got, what)[1]


_RUN_FAILED = "its run failed"
# Rounds of a timing without the race (each candidate every round): where the decision is which of a few
# known candidates is faster, not which of many is fastest.
_UNRACED_ROUNDS = 5


def _time_candidates(candidates: Dict[str, Candidate], tensors: List[torch.Tensor], graph: Dict[str, Any],
                     rounds: int = 10, *, aten_weights: List[torch.Tensor], race: bool = True) -> Dict[str, float]:
    """Median ms of each candidate (a program, or a JustInTime callable on its inputs among the plan on
    ATen's kernels' weights, `aten_weights`, and `tensors`, whether or not that plan is timed too), run in
    alternation on the device (time_callables; without `race`, every candidate every round, so that a
    slow one's time is a median too, not its first run's)."""
    device = tensors[0].device if tensors else torch.device("cpu")
    calls = {name: c.call(graph, aten_weights, tensors) for name, c in candidates.items()}
    return time_callables(calls, device, rounds) if race else time_callables(calls, device, rounds, race=False)


__all__ = ["plan_and_compile", "mismatch"]
