"""The candidates of the export path besides the plan on ATen's kernels (candidate.Candidate): the plan
with parts compiled by each compiler (compilers/: Inductor's "whole", "plan" and "whole_unfrozen",
OpenVINO's "whole_openvino", ONNX Runtime's "whole_onnxruntime"), each planned again over its parts; on
CUDA the plans of other graphs on ATen's kernels (other_graphs: with cuDNN's fused operators,
"aten_cudnn"; with the matmuls and convolutions below float32, "aten_bf16" / "aten_fp16"); and where option
precision allows it on CUDA each of them once more in TF32 (tf32_twins). When they are made relative to
the search (beside it, before it) is decided here too."""
from typing import Any, Callable, Dict, List, NamedTuple, Optional, Sequence, Tuple

import torch
from torch.export import ExportedProgram

from ..settings import Settings
from .aten_import import import_graph, to_device
from .candidate import Candidate, JustInTime, NotAvailable
from .compilers import COMPILERS, Compiler, compiler_on
from .parts import CompiledPart, PartBuilder, every_node, rewrite_with_parts
from . import plans
from .plans import Program
from .lowered_graph import DTYPES as LOWERED_DTYPES
from .program_format import body_of
from .rewrites import fuse_conv_relu_cudnn, lower_precision


def fused_for_cudnn(decomposed: ExportedProgram, target: torch.device,
                    moved: Dict[Any, torch.Tensor]) -> Optional[Tuple[Dict[str, Any], List[torch.Tensor]]]:
    """On CUDA, the graph with convolution (+ add) + relu as cuDNN's fused operators
    (export_rewrites.fuse_conv_relu_cudnn) and its weights on `target`, where that changes anything;
    else None. Planned too, it competes as "aten_cudnn" beside the plan on ATen's kernels (the
    TorchScript path's fold_conv_relu, measured); Inductor's candidates are cut from the unfused graph,
    since to Inductor the fused operators would be opaque calls in place of what it fuses itself."""
    fused = fuse_conv_relu_cudnn(decomposed, target)
    if fused is decomposed:
        return None
    graph, weights, _ = import_graph(fused)
    return graph, [to_device(w, target, moved) for w in weights]


class OtherGraph(NamedTuple):
    """A graph planned on ATen's kernels beside the program's own (other_graphs): the AtenGraph, its
    weights on the device, what it computes in, and the exception that stopped it being made (or None)."""
    graph: Optional[Dict[str, Any]]
    weights: List[torch.Tensor]
    precision: str = "fp32"
    error: Optional[Exception] = None


def offers_aten_lowered(device: torch.device, settings: Settings) -> bool:
    """Whether the plan on ATen's kernels competes below float32 (rewrites.lower_precision): on CUDA, where
    cuDNN and cuBLAS compute bf16 and fp16 on tensor cores, with option precision bf16 or fp16 and
    candidates timed (check_rewrites). On a CPU, OpenVINO's and Inductor's candidates lower instead."""
    return device.type == "cuda" and settings.precision in LOWERED_DTYPES and settings.check_rewrites


def other_graphs(decomposed: ExportedProgram, target: torch.device, moved: Dict[Any, torch.Tensor],
                 settings: Settings) -> Dict[str, OtherGraph]:
    """The graphs planned on ATen's kernels beside the program's own, each a candidate of its name, where
    rewrites are measured (check_rewrites): "aten_cudnn" (fused_for_cudnn) and, where offers_aten_lowered,
    "aten_<precision>" (rewrites.lower_precision)."""
    if not settings.check_rewrites:
        return {}
    out: Dict[str, OtherGraph] = {}
    fused = fused_for_cudnn(decomposed, target, moved)
    if fused is not None:
        out["aten_cudnn"] = OtherGraph(*fused)
    if offers_aten_lowered(target, settings):
        precision = settings.precision
        name = f"aten_{precision}"
        try:
            lowered = lower_precision(decomposed, precision)
            if lowered is not decomposed:
                graph, weights, _ = import_graph(lowered)
                out[name] = OtherGraph(graph, [to_device(w, target, moved) for w in weights], precision)
        except Exception as e:  # noqa: BLE001 - the candidate is out and the report says why
            out[name] = OtherGraph(None, [], precision, e)
    return out


def compiles_beside_search(device: torch.device) -> bool:
    """Whether the whole graph's Inductor compile runs on a thread beside the search: when the search
    times its candidates on a GPU, which the compile (mostly a CPU's work) leaves alone. A CPU's search
    times them on every core: a core kept busy beside it slowed resnet50's plan many times over (its
    timing threads wait on each other), so on CPU the two run one after the other. Not yet measured on a
    GPU: Triton's autotuning runs kernels there while it compiles, which may disturb the search's timing
    (the final choice among candidates is timed after both finish)."""
    return device.type == "cuda"


def _before_search(compiler: Compiler, settings: Settings) -> bool:
    """Whether `compiler`'s whole-graph candidates are asked for and can be made here."""
    return compiler_on(compiler, settings) and compiler.missing() is None


def compiles_before_search(device: torch.device, settings: Settings) -> bool:
    """Whether the whole graph's candidates are started before the search (compile_before_search): on
    CPU, where a compiler that compiles in a process of its own competes (OpenVINO's, ONNX Runtime's:
    options openvino, onnxruntime) and the candidates are timed (check_rewrites), and the search's cost
    model times nothing (analytical, CPU's default), so it can run beside their conversions."""
    if device.type != "cpu" or not settings.check_rewrites or settings.cost not in (None, "analytical"):
        return False  # a measured search times on the CPU
    return any(compiler.compiles_apart and _before_search(compiler, settings) for compiler in COMPILERS)


def compile_before_search(builder: PartBuilder, graph: Dict[str, Any], settings: Settings) -> Dict[str, Any]:
    """The whole graph's candidates started before the search, which they do not need (each compiler's
    before_search): first those compiled in processes of their own (the conversions, the longest step of
    an optimize on CPU) and their lowerings that run apart too (_lowered_apart), then beside them those
    compiled here (Inductor's just-in-time compile of the whole graph, and of it lowered under option
    precision). Returns, by candidate name, a JustInTime, a call that waits for the part compiled (for the
    parts lowered apart), or the exception that stopped a candidate, for compiled_candidates."""
    ready: Dict[str, Any] = {}
    asked = [c for c in COMPILERS if _before_search(c, settings)]
    apart = {c: c.before_search(builder, graph, settings) for c in asked if c.compiles_apart}
    for compiler, made in apart.items():
        ready.update(_lowered_apart(compiler, builder, graph, settings, made))
    for compiler in asked:
        if not compiler.compiles_apart:
            ready.update(compiler.before_search(builder, graph, settings))
    return ready


def _lowered_apart(compiler: Compiler, builder: PartBuilder, graph: Dict[str, Any], settings: Settings,
                   made: Dict[str, Any]) -> Dict[str, Any]:
    """`made` (what `compiler`'s before_search started), each candidate's parts waited for once only, and
    its lowering to each precision the compiler lowers to in a process of its own started once its float32
    parts are made ("<name>_<precision>": a call that waits for the lowered parts, or the exception that
    stopped it): int8's quantizations run beside the compiles of this process (Inductor's just in time)
    instead of after them."""
    out: Dict[str, Any] = {}
    whole = [every_node(graph)]
    for name, wait in made.items():
        if not callable(wait) or isinstance(wait, JustInTime):
            out[name] = wait
            continue
        out[name] = wait = _once(wait)
        for precision in compiler.lowered(builder.device, settings.precision, name):
            if precision not in compiler.lowers_apart:
                continue
            for variant in compiler.variants(builder, whole, precision):
                lowered = lowered_name(name, precision, variant)
                try:
                    out[lowered] = compiler.lower(builder, name, whole, [f"{lowered} part 1/1"], [wait()], precision,
                                                  variant)
                except Exception as e:  # noqa: BLE001 - the candidate is out and the report says why
                    out[lowered] = e
    return out


def lowered_name(name: str, precision: str, variant: str) -> str:
    """Candidate `name` lowered to `precision` the way `variant` says: "<name>_<precision>[_<variant>]"."""
    return f"{name}_{precision}" + (f"_{variant}" if variant else "")


def _once(wait: Callable[[], CompiledPart]) -> Callable[[], CompiledPart]:
    """`wait` (a call that waits for one part) as a call that waits once and returns that part each time
    after (or raises what it raised)."""
    got: List[Tuple[Optional[CompiledPart], Optional[Exception]]] = []

    def waited() -> CompiledPart:
        if not got:
            try:
                got.append((wait(), None))
            except Exception as e:  # noqa: BLE001 - raised to every caller
                got.append((None, e))
        part, error = got[0]
        if error is not None:
            raise error
        return part
    return waited


def compiled_candidates(builder: PartBuilder, graph: Dict[str, Any], program: str,
                        weights: List[torch.Tensor], tensors: List[torch.Tensor], settings: Settings,
                        ready: Optional[Dict[str, Any]] = None) -> Tuple[Dict[str, Candidate], int]:
    """The candidates of each compiler (compilers.COMPILERS) whose option is on: the plan in `program`
    with parts compiled by it, each planned again over its parts. Every compile starts before any is
    waited for, so that one running in a process of its own runs beside the others. `ready`: what
    compile_before_search made of a candidate (a JustInTime, a call that waits for its part, or the
    exception that stopped it) stands for compiling it here: where a compiler that converts apart
    competes, the whole graph's Inductor candidate is such a JustInTime, in place of a program (its
    ahead-of-time package costs far more than its just-in-time compile:
    bench/results/export-path-2026-11-26e-cpu). Returns {name: Candidate} (a candidate that could not be
    built is out, with why) and how many parts came from the disk cache."""
    body = body_of(program)
    ready = ready or {}
    plan_unverified = bool(ready) and settings.method == "autograph"  # a stand-in (contest.py)
    offered: Dict[str, Tuple[Compiler, List[List[int]]]] = {}
    out: Dict[str, Candidate] = {}
    for compiler in COMPILERS:
        if not compiler_on(compiler, settings):
            continue
        cuts = compiler.offers(builder, graph, body, settings, plan_unverified)
        missing = compiler.missing() if cuts else None
        for name, parts in cuts.items():
            kind = _kind(name, compiler)
            if missing:  # the report says why the candidate the option asks for is not there
                why = NotAvailable(f"{compiler.name}'s candidate is not available: {missing}")
                out[name] = Candidate.failed(name, why, compiler=compiler, kind=kind)
            else:
                offered[name] = (compiler, parts)
    started = {}
    for name, (compiler, parts) in offered.items():
        if name not in ready:
            labels = [f"{name} part {k + 1}/{len(parts)}" for k in range(len(parts))]
            try:
                started[name] = compiler.start(builder, name, parts, labels)
            except Exception as e:  # noqa: BLE001 - the candidate is out and the report says why
                out[name] = Candidate.failed(name, e, compiler=compiler, kind=_kind(name, compiler))
    lowered: Dict[str, Callable[[], Candidate]] = {}  # started, waited for once every compiler's are
    for name, (compiler, parts) in offered.items():
        if name in out:
            continue
        kind = _kind(name, compiler)
        try:
            made = ready.get(name)
            if isinstance(made, Exception):
                raise made
            if isinstance(made, JustInTime):
                out[name] = Candidate.of(name, made, compiler=compiler, kind=kind)
                lowered.update(_lowered(compiler, name, builder, graph, weights, tensors, settings, body, parts,
                                        None, ready))
                continue
            compiled = [made()] if made else started[name]()
            out[name] = Candidate.of(name, program_with_parts(builder, graph, weights, tensors, settings, body, parts,
                                                              compiled), compiler=compiler, kind=kind)
            out[name].parts, out[name].compiled = parts, compiled
        except Exception as e:  # noqa: BLE001 - the candidate is out and the report says why
            out[name] = Candidate.failed(name, e, compiler=compiler, kind=kind)
            continue
        lowered.update(_lowered(compiler, name, builder, graph, weights, tensors, settings, body, parts, compiled,
                                ready))
    out.update({name: wait() for name, wait in lowered.items()})
    return out, builder.cached


def _kind(name: str, compiler: Compiler) -> str:
    """What candidate `name` (one of `compiler`'s offers) is of that compiler: its offer's name without the
    compiler's own label ("whole_openvino" is OpenVINO's "whole")."""
    suffix = f"_{compiler.label}"
    return name[:-len(suffix)] if name.endswith(suffix) else name


def _lowered(compiler: Compiler, name: str, builder: PartBuilder, graph: Dict[str, Any],
             weights: List[torch.Tensor], tensors: List[torch.Tensor], settings: Settings, body: Dict[str, Any],
             parts: List[List[int]], compiled: Optional[List[CompiledPart]],
             ready: Dict[str, Any]) -> Dict[str, Callable[[], Candidate]]:
    """Candidate `name` once more in each precision below float32 its compiler lowers its parts to, down to
    option precision (compiler.lowered): "<name>_<precision>", its parts as compiler.lower makes them; or
    what compile_before_search made of it (`ready`: a JustInTime, or the exception that stopped it). Each
    started (a quantization in a process of its own runs beside the next compiler's), by name a call that
    waits for the candidate."""
    out: Dict[str, Callable[[], Candidate]] = {}
    kind = _kind(name, compiler)
    for precision in compiler.lowered(builder.device, settings.precision, name):
        for variant in compiler.variants(builder, parts, precision):
            lowered = lowered_name(name, precision, variant)
            out[lowered] = _lowered_one(compiler, name, builder, graph, weights, tensors, settings, body, parts,
                                        compiled, ready.get(lowered), (lowered, precision, kind, variant))
    return out


def _lowered_one(compiler: Compiler, name: str, builder: PartBuilder, graph: Dict[str, Any],
                 weights: List[torch.Tensor], tensors: List[torch.Tensor], settings: Settings, body: Dict[str, Any],
                 parts: List[List[int]], compiled: Optional[List[CompiledPart]], made: Any,
                 what: Tuple[str, str, str, str]) -> Callable[[], Candidate]:
    """Candidate `name` lowered as `what` says (its name, precision, kind, variant): what
    compile_before_search `made` of it, else lowered now; a call that waits for the candidate."""
    lowered, precision, kind, variant = what
    labels = [f"{lowered} part {k + 1}/{len(parts)}" for k in range(len(parts))]
    tags = dict(precision=precision, compiler=compiler, kind=kind, variant=variant)
    if isinstance(made, Exception):
        return lambda: Candidate.failed(lowered, made, **tags)
    if isinstance(made, JustInTime):
        return lambda: Candidate.of(lowered, made, compiler=compiler, kind=kind)
    try:  # started before the search (compile_before_search), else now
        wait = made if made is not None else compiler.lower(builder, name, parts, labels, compiled, precision, variant)
    except Exception as e:  # noqa: BLE001 - the candidate is out and the report says why
        return lambda: Candidate.failed(lowered, e, **tags)

    def finished() -> Candidate:
        try:
            made = wait()
            program = program_with_parts(builder, graph, weights, tensors, settings, body, parts, made)
            candidate = Candidate.of(lowered, program, **tags)
            candidate.parts, candidate.compiled = parts, made
            return candidate
        except Exception as e:  # noqa: BLE001 - the candidate is out and the report says why
            return Candidate.failed(lowered, e, **tags)
    return finished


def offers_tf32(device: torch.device, settings: Settings) -> bool:
    """Whether the candidates compete once more in TF32 (tf32_twins): on CUDA (a CPU's float32 kernels have
    no TF32), with option precision below fp32, and with candidates timed (check_rewrites: a twin is
    kept only where it measures faster)."""
    return device.type == "cuda" and settings.precision != "fp32" and settings.check_rewrites


def tf32_twins(candidates: Dict[str, Candidate]) -> Dict[str, Candidate]:
    """"<name>_tf32" for each competing candidate that is a program computing in float32: the same program
    with its float32 matmuls and convolutions in TF32 (torch.ops.autograph.with_tf32: the switch travels in
    the program and is on while it runs, its compiled parts' ATen calls included); lowered, so it is
    judged against option tolerance like every candidate below float32."""
    out = {}
    for name, c in candidates.items():
        if not (c.competing and c.package is not None and not c.lowered):
            continue
        twin, program = f"{name}_tf32", c.package
        try:
            text = torch.ops.autograph.with_tf32(program.text)
            out[twin] = Candidate.of(twin, Program(text, program.weights, program.report, program.parts), "tf32",
                                     compiler=c.compiler, kind=c.kind)
        except (RuntimeError, ValueError) as e:  # the candidate is out and the report says why
            out[twin] = Candidate.failed(twin, e, precision="tf32", compiler=c.compiler, kind=c.kind)
    return out


def program_with_parts(builder: PartBuilder, graph: Dict[str, Any], weights: List[torch.Tensor],
                       tensors: List[torch.Tensor], settings: Settings, body: Dict[str, Any],
                       parts: Sequence[Sequence[int]], compiled: Sequence[CompiledPart]) -> Program:
    """The program with each of `parts` one call of its compiled part (parts.rewrite_with_parts: the parts
    of several compilers may sit side by side), planned again over the parts."""
    rewritten, kept_weights = rewrite_with_parts(graph, weights, body, parts, compiled, builder.device)
    # One part leaves nothing to plan (the search and its on-board timing would take long on a large
    # graph for the same one-step schedule).
    part_settings = plans.replaced(settings, method="sequential") if len(parts) == 1 else settings
    rewritten_program, rewritten_report = plans.plan(rewritten, kept_weights + tensors, part_settings)
    return Program(rewritten_program, kept_weights, rewritten_report, len(parts))


__all__ = ["compiled_candidates", "program_with_parts", "offers_tf32", "tf32_twins", "compiles_beside_search",
           "compiles_before_search", "compile_before_search", "fused_for_cudnn", "OtherGraph", "other_graphs",
           "offers_aten_lowered"]
