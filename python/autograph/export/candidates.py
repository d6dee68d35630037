"""The candidates of the export path besides the plan on ATen's kernels: the plan with parts compiled by
a compiler (Inductor's "whole", "plan" and "whole_unfrozen", OpenVINO's "whole_openvino"), each planned
again over its parts, and on CUDA the plan of the graph with cuDNN's fused operators ("aten_cudnn").
When they are made relative to the search (beside it, before it) is decided here too."""
from typing import Any, Callable, Dict, List, NamedTuple, Optional, Tuple

import torch
from torch.export import ExportedProgram

from .aten_import import import_graph, to_device
from .compilers import inductor as inductor_parts
from .compilers.inductor import PartBuilder
from .compilers import openvino as openvino_parts
from . import plans
from .plans import Program
from .program_format import body_of
from .progress import logger
from .rewrites import fuse_conv_relu_cudnn


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


def compiles_beside_search(device: torch.device) -> bool:
    """Whether the whole graph's Inductor compile runs on a thread beside the search: when the search
    times its candidates on a GPU, which the compile (mostly a CPU's work) leaves alone. A CPU's search
    times them on every core: a core kept busy beside it slowed resnet50's plan many times over (its
    timing threads wait on each other), so on CPU the two run one after the other. Not yet measured on a
    GPU: Triton's autotuning runs kernels there while it compiles, which may disturb the search's timing
    (the final choice among candidates is timed after both finish)."""
    return device.type == "cuda"


def compiles_before_search(device: torch.device, settings: Dict[str, Any]) -> bool:
    """Whether the whole graph's candidates are started before the search (compile_before_search): on
    CPU, where OpenVINO's candidate competes and the candidates are timed (options openvino and
    check_rewrites, as they default), and the search's cost model times nothing (analytical, CPU's
    default), so it can run beside OpenVINO's conversion."""
    if device.type != "cpu" or not settings["openvino"] or not settings["check_rewrites"] \
            or settings.get("cost") not in (None, "analytical"):  # a measured search times on the CPU
        return False
    return openvino_parts.available()


def compile_before_search(builder: PartBuilder, graph: Dict[str, Any]) -> Dict[str, Any]:
    """The whole graph's candidates started before the search, which they do not need: OpenVINO's
    conversion in its process of its own (the longest step of an optimize on CPU, bert_base's among
    them), and beside it Inductor's just-in-time compile of the whole graph (a JustInTime; none
    when its package is in the disk cache). Returns {"whole": JustInTime, "whole_openvino": a call that
    waits for the conversion}, or the exception that stopped a candidate, for inductor_candidates."""
    part = inductor_parts.every_node(graph)
    ready: Dict[str, Any] = {}
    try:
        ready["whole_openvino"] = openvino_parts.start(builder, part, "whole_openvino part 1/1")
    except Exception as e:  # noqa: BLE001 - the candidate is dropped and the report says why
        ready["whole_openvino"] = e
    if not builder.is_cached(part):
        try:
            ready["whole"] = JustInTime(*builder.compile_just_in_time(part, "whole part 1/1"), part, "whole part 1/1",
                                        True)
        except Exception as e:  # noqa: BLE001 - as above
            ready["whole"] = e
    return ready


class JustInTime(NamedTuple):
    """A one-part Inductor candidate compiled just in time (PartBuilder.compile_just_in_time): timed and
    checked as a callable on the part's inputs, and packaged ahead of time only when it is kept."""
    call: Callable[..., Any]
    input_ids: List[int]
    output_ids: List[int]
    part: List[int]
    label: str
    freezing: bool

    def inputs(self, graph: Dict[str, Any], passed: List[torch.Tensor]) -> List[torch.Tensor]:
        """Its input tensors among those a program of `graph` is passed (its weights, then the user's)."""
        weights = [v for v, is_weight in zip(graph["inputs"], graph["weights"]) if is_weight]
        users = [v for v, is_weight in zip(graph["inputs"], graph["weights"]) if not is_weight]
        value = dict(zip(weights + users, passed))
        return [value[v] for v in self.input_ids]


def described(candidate) -> Dict[str, Any]:
    if isinstance(candidate, JustInTime):
        return {"parts": 1, "compiled": "just in time"}
    return {"parts": candidate.parts}


class NotAvailable(str):
    """Why an optional compiler's candidate is missing (its package is not installed): reported like an
    error, but not one that strict=True raises for."""


def inductor_candidates(builder: PartBuilder, graph: Dict[str, Any], program: str,
                        weights: List[torch.Tensor], tensors: List[torch.Tensor], settings: Dict[str, Any],
                        ready: Optional[Dict[str, Any]] = None):
    """The programs with parts compiled by Inductor (by `builder`, inductor_parts.PartBuilder): "whole"
    (the graph as one part), "plan" (its parts)
    when the plan in `program` runs groups side by side, "whole_unfrozen" (no freezing) when a weight
    feeds several compute-bound operators (inductor_parts.shares_weights), and on CPU "whole_openvino"
    (the graph as one OpenVINO part, converted in a process of its own while Inductor compiles the
    others); each planned again over its parts.
    `ready`: what compile_before_search made of a candidate (a JustInTime, a call that waits for its
    package, or the exception that stopped it) stands for compiling it here. Where OpenVINO's candidate competes, the
    whole graph's Inductor candidate is such a JustInTime, in place of a program: OpenVINO's was the
    fastest on every zoo model (bench/results/export-path-2026-11-26g-cpu), and Inductor's ahead-of-time
    package costs far more than its just-in-time compile (bench/results/export-path-2026-11-26e-cpu).
    Returns {name: (program, weights, report, parts) or JustInTime}, {name: why it could not be built}
    and how many parts came from the disk cache."""
    device = torch.device(settings["device"])
    body = body_of(program)
    cuts = {"whole": inductor_parts.whole_graph_part(body)}
    plan_parts = builder.closed(inductor_parts.parts_of_plan(body))
    # Not from a plan that is to be verified later (compile_before_search): its concurrency is the
    # analytical model's guess. resnext50's unverified plan had several parts, each a long compile, and
    # ran no faster than the whole graph's; the verified plan left no parts to compile.
    if 1 < len(plan_parts) <= inductor_parts.MAX_PARTS and not (ready and plans.verifies(settings)):
        cuts["plan"] = plan_parts
    if inductor_parts.shares_weights(graph, body, builder.packs_linear_at_run_time()):
        cuts["whole_unfrozen"] = cuts["whole"]
    built, errors = {}, {}
    if device.type == "cpu" and settings["openvino"]:
        missing = openvino_parts.missing()
        if missing:  # the report says why the candidate the option asks for is not there
            errors["whole_openvino"] = NotAvailable(f"OpenVINO's candidate is not available: {missing}")
        else:
            cuts["whole_openvino"] = cuts["whole"]
    ready = ready or {}
    labels = {name: [f"{name} part {k + 1}/{len(parts)}" for k in range(len(parts))] for name, parts in cuts.items()}
    converting = []  # OpenVINO's conversion starts first: it runs in a process of its own beside Inductor
    if "whole_openvino" in cuts and "whole_openvino" not in ready:
        try:
            converting = [openvino_parts.start(builder, p, label)
                          for p, label in zip(cuts["whole_openvino"], labels["whole_openvino"])]
        except Exception as e:  # noqa: BLE001 - the candidate is dropped and the report says why
            errors["whole_openvino"] = why_of(e, "whole_openvino")
    for name, parts in cuts.items():
        if name in errors:
            continue
        try:
            made = ready.get(name)
            if isinstance(made, Exception):
                raise made
            if isinstance(made, JustInTime):
                built[name] = made
                continue
            if name == "whole_openvino":
                compiled = [made()] if made else [result() for result in converting]
                call = {"op": openvino_parts.PART_OP, "fmt": openvino_parts.FORMAT}
            else:
                compiled = [builder.compile(p, label, freezing=name != "whole_unfrozen")
                            for p, label in zip(parts, labels[name])]
                call = {}
            built[name] = program_with_parts(builder, graph, weights, tensors, settings, body, parts, compiled, **call)
        except Exception as e:  # noqa: BLE001 - the candidate is dropped and the report says why
            errors[name] = why_of(e, name)
    return built, errors, builder.cached


def program_with_parts(builder: PartBuilder, graph: Dict[str, Any], weights: List[torch.Tensor],
                       tensors: List[torch.Tensor], settings: Dict[str, Any], body: Dict[str, Any],
                       parts: List[List[int]], compiled, **call) -> Program:
    """The program with each of `parts` one call of its compiled package (rewrite_with_parts), planned
    again over the parts: (program, weights, report, number of parts)."""
    rewritten, kept_weights = inductor_parts.rewrite_with_parts(graph, weights, body, parts, compiled, builder.device,
                                                                **call)
    # One part leaves nothing to plan (the search and its on-board timing would take long on a large
    # graph for the same one-step schedule).
    part_settings = dict(settings, method="sequential") if len(parts) == 1 else settings
    rewritten_program, rewritten_report = plans.planned(rewritten, kept_weights + tensors, part_settings)
    return Program(rewritten_program, kept_weights, rewritten_report, len(parts))


def why_of(e: BaseException, what: str = "a candidate") -> str:
    """`e` in one line, for the report; its traceback goes to the "autograph" logger (debug), so that
    what failed inside a compiler can be found without running it again."""
    logger.debug("autograph: %s failed", what, exc_info=e)
    return f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"


__all__ = ["JustInTime", "NotAvailable", "described", "inductor_candidates", "program_with_parts",
           "compiles_beside_search", "compiles_before_search", "compile_before_search", "fused_for_cudnn", "why_of"]
