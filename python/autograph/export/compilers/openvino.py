"""Parts compiled by OpenVINO (export path, CPU): one more candidate compiler beside Inductor.

OpenVINO's CPU plugin runs some models well ahead of Inductor's C++ code (depthwise-separable and
NAS-style convolution networks such as nasnet_a_mobile: bench/results/export-path-2026-11-26d-cpu). A
part is exported to ONNX by torch.onnx in autograph's process (onnx_export: once per part, whichever
compilers read it) and read by OpenVINO (its PyTorch frontend where that export fails; see
openvino_convert.py) in a Python process of its own that runs beside the other compilers' work
(converter_process), serialized as IR (XML and float32 weights, never compressed to float16) and packed
into one uint8 tensor (openvino_convert.save_package). In the program it becomes one
``autograph::run_openvino_part`` call, which libautograph_openvino.so runs with the latency hint and the
inference precision its spec names (float32, or bf16 where option precision lowered it: the same
package, lowered whole or part by part: lowering.py). Like every candidate it is kept only where the
whole program measures faster. Packages are cached on disk beside the other compilers' (export/cache.py),
keyed by the part's graph, its weights and the OpenVINO and torch versions.
"""
import functools
import logging
import os
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import torch

from ..._library import openvino_missing
from ...errors import Error
from ...settings import Settings
from .. import cache as part_cache
from ..parts import CompiledPart, NodeTimes, PartBuilder, every_node, part_digest, run_profiled, whole_graph_part
from . import converter_process
from .cpu_features import cpu_has_bf16
from . import onnx_export
from . import onnx_profile
from . import openvino_convert as _openvino_convert
from . import openvino_quantize
from . import openvino_revert
from .converter_process import Converter, PendingPackage
from .quantized_part import aim_of, in_turn, start_quantized_package, warm, whole

_SUFFIX = ".ovpart"
# How long the converter process may take: a hung one must not hang optimize (the candidate is then
# dropped, and the report says why). The largest models convert well within it.
CONVERT_TIMEOUT_S = 600.0

# NNCF, which quantizes OpenVINO's packages to INT8 (option precision int8), pinned and installed apart
# from autograph's environment (openvino_quantize.py says why); how long its process may take.
NNCF_VERSION = "3.4.0"
QUANTIZE_TIMEOUT_S = 600.0

PART_OP = "autograph::run_openvino_part"
FORMAT = "autograph-openvino-part"
# OpenVINO's frontends make a recurrent layer one or more operations of these types, named afresh and
# naming no original layer: their kernels lead back to the part's graph node of the matching operator
# where the part has exactly one such node (recurrent_nodes).
_RECURRENT = {"LSTMSequence": "aten::lstm", "GRUSequence": "aten::gru", "RNNSequence": "aten::rnn_"}
logger = logging.getLogger("autograph")


def missing() -> Optional[str]:
    """Why OpenVINO parts cannot be built and run in this process, or None where they can."""
    return openvino_missing()


def available() -> bool:
    """Whether OpenVINO parts can be built and run in this process (missing() says why not)."""
    return missing() is None


def converter() -> Converter:
    """OpenVINO's converter process (read at each start: its file and timeout are looked up then)."""
    return Converter("OpenVINO", _openvino_convert.__file__, _openvino_convert.MAGIC, _SUFFIX, CONVERT_TIMEOUT_S)


def start(builder: PartBuilder, part: Sequence[int], label: str) -> Callable[[], CompiledPart]:
    """Starts making `part` of the builder's graph an OpenVINO package (start_package: in a process of
    its own; its linears stay aten.linear, its ONNX model shared with the other compilers that read ONNX);
    the returned call waits for it and returns the part compiled. The builder's close stops a conversion
    nobody waited for."""
    exported = onnx_export.exported_part(builder, part)
    pending = start_package(exported.module, exported.examples, label, builder.progress, builder.weight_digests,
                            onnx=exported.onnx)
    builder.keep_until_close(pending)
    return lambda: CompiledPart(pending.result(), exported.input_ids, exported.output_ids, PART_OP, FORMAT)


def start_package(gm: torch.fx.GraphModule, examples: Sequence[torch.Tensor], label: str = "part",
                  progress=None, digests: Optional[Dict[Any, Any]] = None,
                  onnx: Optional[Callable[[], bytes]] = None) -> PendingPackage:
    """Starts making the part `gm` (an ATen graph module, its weights as attributes) an OpenVINO package:
    from the disk cache when there; else its ONNX model (`onnx`, else torch.onnx's export here) is read by
    OpenVINO and the package written in a Python process of its own, on a core of its own beside the
    compiles in this one (on bert_base the export here and the conversion there take about as long).
    Where torch.onnx cannot export the part, the process converts its pickled module by OpenVINO's
    PyTorch frontend; where that process cannot start or fails, the conversion runs here when result()
    is called. `digests`: as parts.part_digest's."""
    why = openvino_missing()
    if why:
        raise Error(f"OpenVINO parts are not available: {why}")
    import openvino as ov
    configs = {"compiler": "openvino", "via": "onnx, unoptimized", "version": ov.__version__}
    content = part_digest(gm, examples, torch.device("cpu"), configs, digests)
    entry = part_cache.key("openvino-part", torch.device("cpu"), configs, content)
    cached = part_cache.read(entry, _SUFFIX)
    if cached is not None:
        return PendingPackage(package=cached)
    if progress:
        progress(f"compiling {label} with OpenVINO")
    # The process starts first: it imports OpenVINO while this one exports the part.
    pending = converter_process.start_process(converter(), entry)
    try:
        try:
            model = onnx() if onnx is not None else onnx_export.onnx_of(gm, examples)
        except Exception as e:  # noqa: BLE001 - OpenVINO's PyTorch frontend may still convert the part
            logger.info("autograph: torch.onnx cannot export %s (%s); OpenVINO's PyTorch frontend converts it",
                        label, e)
            model = None
        return _hand_over(gm, examples, label, model, pending)
    except BaseException:
        pending.close()
        raise


def _hand_over(gm: torch.fx.GraphModule, examples: Sequence[torch.Tensor], label: str, model: Optional[bytes],
               pending: PendingPackage) -> PendingPackage:
    """The part (and `model`, its ONNX model, where torch.onnx exported it) handed to the converter
    process, or converted here when result() is called where there is none or it fails."""
    exported = model is not None
    path = pending.path
    if pending._process is None:
        pending.converts_here(functools.partial(_convert_here, gm, examples, path, model, exported))
        return pending
    # Where the process fails, its model is not at hand any more: converted here from the start.
    pending.converts_here(functools.partial(_convert_here, gm, examples, path, None, exported))
    if not exported:
        folder = pending._folder.name
        try:  # the module pickled, code and weights (slow for a large model)
            torch.save(gm, os.path.join(folder, "part.pt"))
            torch.save(tuple(examples), os.path.join(folder, "examples.pt"))
        except Exception as e:  # noqa: BLE001 - a module that does not pickle: converted here
            logger.info("autograph: %s does not pickle (%s); converting it here", label, e)
            converter_process.kill_group(pending._process)
            pending._process.wait()
            pending._process = None
            return pending
        converter_process.tell(pending._process, _openvino_convert.PYTORCH)
        return pending
    pending.send(_openvino_convert.onnx_header(len(model)), model)
    return pending


def _convert_here(gm: torch.fx.GraphModule, examples: Sequence[torch.Tensor], path: str, model: Optional[bytes],
                  exported: bool) -> None:
    """The package converted in this process: from `model` (the ONNX model) where it is at hand, else
    exported again where torch.onnx could (`exported`), else by OpenVINO's PyTorch frontend."""
    if model is None and exported:
        try:
            model = onnx_export.onnx_of(gm, examples)
        except Exception:  # noqa: BLE001 - the other frontend may still take it
            model = None
    converted = _openvino_convert.from_onnx(model) if model is not None else \
        _openvino_convert.from_pytorch(gm, examples)
    _openvino_convert.save_package(converted, path)


def compile_package(gm: torch.fx.GraphModule, examples: Sequence[torch.Tensor], label: str = "part",
                    progress=None) -> bytes:
    """The part `gm` as an OpenVINO package (start_package, waited for)."""
    return start_package(gm, examples, label, progress).result()


def node_times(builder: PartBuilder, part: Sequence[int], made: CompiledPart) -> NodeTimes:
    """Where one run of `part`, compiled (`made`), spends its time, node by node: OpenVINO's own per-node
    counters on the package compiled as the runner compiles it (latency hint, its precision), summed over
    runs on the part's example inputs (parts.run_profiled), each executed node counted to the original layers
    it fused (its runtime model's "originalLayersNames"; a recurrent operation to the part's recurrent node,
    recurrent_nodes), read back to the graph's nodes (onnx_profile)."""
    import openvino as ov
    xml, weights = _openvino_convert.read_package(made.package)
    core = ov.Core()
    model = core.read_model(model=xml, weights=ov.Tensor(weights))  # a copy of its own (shared_memory off)
    compiled = core.compile_model(model, "CPU", {
        "PERF_COUNT": True, "PERFORMANCE_HINT": "LATENCY",
        "INFERENCE_PRECISION_HINT": "bf16" if made.precision == "bf16" else "f32"})
    request = compiled.create_infer_request()
    inputs = [t.contiguous().numpy() for t in builder.examples(made.input_ids)]
    request.infer(inputs)
    us: Dict[str, float] = {}
    order: List[str] = []
    types: Dict[str, str] = {}

    def profiled() -> None:
        request.infer(inputs)
        for counter in request.get_profiling_info():
            if counter.node_name not in us:
                order.append(counter.node_name)
                types[counter.node_name] = counter.node_type
            us[counter.node_name] = us.get(counter.node_name, 0.0) + counter.real_time.total_seconds() * 1e6

    run_profiled(profiled)
    fused: Dict[str, List[str]] = {}
    for op in compiled.get_runtime_model().get_ops():
        info = op.get_rt_info()
        originals = info["originalLayersNames"].astype(str) if "originalLayersNames" in info else ""
        fused[op.get_friendly_name()] = [n for n in originals.split(",") if n]
    recurrent = recurrent_nodes(builder, part)
    kernels = (((fused.get(name) or [name]) + recurrent.get(types[name], []), us[name]) for name in order)
    return onnx_profile.part_times(builder, part, kernels)


def recurrent_nodes(builder: PartBuilder, part: Sequence[int]) -> Dict[str, List[str]]:
    """For each of OpenVINO's recurrent operation types (_RECURRENT), the part's one graph node of the
    matching operator (a list of it), where the part has exactly one."""
    nodes = [builder.graph["nodes"][i] for i in part]
    out: Dict[str, List[str]] = {}
    for kind, op in _RECURRENT.items():
        matching = [n["name"] for n in nodes if n["op"].startswith(op)]
        if len(matching) == 1:
            out[kind] = matching
    return out


def nncf_dir() -> str:
    """Where NNCF is installed for the quantizing process: AUTOGRAPH_NNCF_DIR, else scripts/setup.sh's place."""
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.environ.get("AUTOGRAPH_NNCF_DIR") or os.path.join(cache, "autograph", f"nncf-{NNCF_VERSION}")


def int8_missing() -> Optional[str]:
    """Why OpenVINO's parts cannot be quantized to INT8 here, or None where they can."""
    why = missing()
    if why:
        return why
    if not os.path.isfile(os.path.join(nncf_dir(), "nncf", "__init__.py")):
        return (f"NNCF {NNCF_VERSION} is not installed in {nncf_dir()} (scripts/setup.sh installs it there, apart from "
                "autograph's environment; or set AUTOGRAPH_NNCF_DIR to a folder made by pip install --target)")
    return None


def quantizer() -> Converter:
    """NNCF's quantizing process (openvino_quantize.py), its packages OpenVINO's."""
    return Converter("NNCF", openvino_quantize.__file__, _openvino_convert.MAGIC, _SUFFIX, QUANTIZE_TIMEOUT_S,
                     env={"AUTOGRAPH_NNCF_DIR": nncf_dir()}, early=True)


def start_quantized(builder: PartBuilder, made: CompiledPart, part: Sequence[int],
                    label: str, variant: str = "") -> Callable[[], CompiledPart]:
    """Starts quantizing `made` (`part`'s float32 package) to INT8 by NNCF on the part's inputs at each calibration
    input, in a process of its own (openvino_quantize; quantized_part.start_quantized_package); the returned call
    waits for the part. Where the part is the whole graph, its outputs the program's, and the builder has an aim (a
    built-in measure and its bound), the quantization aims at it on the example and calibration inputs (a part's own
    outputs are no program's: judged by the measure, they would say little), with NNCF's model types for
    `variant` (model_types). Its spec's precision is "int8": the runner compiles it with float32 inference
    precision, the operators NNCF quantized running in INT8."""
    why = int8_missing()
    if why:
        raise Error(f"int8 parts are not available: {why}")
    import openvino as ov
    aim, judged = aim_of(builder, made, part)
    configs = {"compiler": "openvino", "via": "nncf.quantize", "recipes": openvino_quantize.RECIPES,
               "ranked_at_most": openvino_quantize.RANKED_AT_MOST, "ranking_budget": openvino_quantize.RANKING_BUDGET,
               "missed_by_at_most": openvino_quantize.MISSED_BY_AT_MOST,
               "unranked": "the last quantization made", "beyond_ranked": "fast bias correction", "nncf": NNCF_VERSION,
               "version": ov.__version__}
    wait = start_quantized_package(quantizer(), "openvino-int8-part", builder, made, label, configs,
                                   {"aim": aim, "model_types": model_types(builder, part, variant)}, judged)
    return lambda: made._replace(package=wait(), precision="int8")


def revert(builder: PartBuilder, part: Sequence[int], lowered: CompiledPart, float32: CompiledPart,
           in_float: Sequence[int]) -> CompiledPart:
    """`part` quantized by NNCF (`lowered`, from the float32 package `float32`) with the OpenVINO operations
    of the graph nodes `in_float` computing in float32 again (openvino_revert): each operation led back to
    its graph node by its name, as a profile's kernels are (onnx_profile.node_of); one led back to none
    stays as NNCF made it."""
    nodes = {builder.graph["nodes"][i]["name"] for i in part}
    in_float_names = {builder.graph["nodes"][i]["name"] for i in in_float}
    fx_names = onnx_export.exported_part(builder, part).fx_names()
    package = openvino_revert.reverted(lowered.package, float32.package,
                                       lambda name: onnx_profile.node_of(name, nodes, fx_names) in in_float_names)
    return lowered._replace(package=package)


def whole_transformer(builder: PartBuilder, parts: List[List[int]]) -> bool:
    """Whether `parts` are one part, the whole graph, a transformer's (transformer): NNCF's two model types
    quantize it as two candidates (variants), neither the faster on every model."""
    return len(parts) == 1 and whole(builder, parts[0]) and transformer(builder, parts[0])


def model_types(builder: PartBuilder, part: Sequence[int], variant: str) -> List[Optional[str]]:
    """NNCF's model types `part` is quantized with, in turn, until one meets the aim (None: as any model):
    as NNCF quantizes transformers for variant "transformer"; a transformer's whole graph as any model
    otherwise (the other type is a candidate of its own); any other transformer's part as any model first
    (openvino_quantize.TRANSFORMER_TYPES); any other part as any model."""
    if variant == "transformer":
        return ["TRANSFORMER"]
    if whole(builder, part) or not transformer(builder, part):
        return [None]
    return list(openvino_quantize.TRANSFORMER_TYPES)


def transformer(builder: PartBuilder, part: Sequence[int]) -> bool:
    """Whether `part` holds attention (a softmax, or fused attention) and a normalization (layer or RMS
    norm): a transformer's, which NNCF may quantize with its transformer patterns (its softmax and
    normalizations kept in float, SmoothQuant on its matmuls' activations)."""
    ops = {builder.graph["nodes"][n]["op"] for n in part}
    return (any("softmax" in op or "scaled_dot_product" in op for op in ops)
            and any("layer_norm" in op or "rms_norm" in op for op in ops))


class OpenVinoCompiler:
    """OpenVINO's candidates (compilers/base.Compiler): "whole_openvino", the graph as one part, on CPU, and
    its parts where they mix with other compilers' (mixing.py); each part converted in a process of its
    own (start), beside the other compilers' work."""
    name = "OpenVINO"
    option = "openvino"
    label = "openvino"
    lowers_by_parts = True  # a part lowered is the same package, its precision in its spec
    mixes_parts = True
    compiles_apart = True
    lowers_apart = ("int8",)  # NNCF's quantization
    reverts = ("int8",)  # NNCF's FakeQuantizes and INT8 weights turned back (openvino_revert)

    def missing(self) -> Optional[str]:
        return missing()

    def offers(self, builder: PartBuilder, graph: Dict[str, Any], body: Dict[str, Any], settings: Settings,
               plan_unverified: bool) -> Dict[str, List[List[int]]]:
        return {"whole_openvino": whole_graph_part(body)} if builder.device.type == "cpu" else {}

    def lowered(self, device: torch.device, precision: str, candidate: str) -> List[str]:
        # bf16: the same IR compiled with bf16 inference precision, where the CPU computes bf16
        # (cpu_features: elsewhere OpenVINO computes float32, which is no bf16 candidate). int8: the IR
        # quantized by NNCF, where it is installed; bf16's candidates compete beside it.
        if device.type != "cpu" or precision not in ("bf16", "int8"):
            return []
        return ((["int8"] if precision == "int8" and int8_missing() is None else [])
                + (["bf16"] if cpu_has_bf16() else []))

    def lowering(self) -> str:
        why = int8_missing()
        bf16 = "bf16 on CPU" if cpu_has_bf16() else "bf16 on a CPU that computes it (not this one)"
        return f"OpenVINO's candidates to {bf16}, and to int8 by NNCF" + (f" (not here: {why})" if why else "")

    def variants(self, builder: PartBuilder, parts: List[List[int]], precision: str) -> Tuple[str, ...]:
        # A transformer's whole graph in INT8 as any model and as NNCF quantizes transformers, timed side by
        # side: neither is the faster on every model (model_types).
        return ("", "transformer") if precision == "int8" and whole_transformer(builder, parts) else ("",)

    def lower(self, builder: PartBuilder, name: str, parts: List[List[int]], labels: List[str],
              compiled: List[CompiledPart], precision: str, variant: str = "") -> Callable[[], List[CompiledPart]]:
        if precision == "int8":
            builder.calibration_examples_of([c.input_ids for c in compiled])  # one run of the graph for all
            return in_turn([functools.partial(start_quantized, builder, c, part, label, variant)
                            for c, part, label in zip(compiled, parts, labels)])
        made = [c._replace(precision=precision) for c in compiled]  # the same packages: the precision in their specs
        return lambda: made

    def revert(self, builder: PartBuilder, part: Sequence[int], lowered: CompiledPart, float32: CompiledPart,
               in_float: Sequence[int]) -> CompiledPart:
        return revert(builder, part, lowered, float32, in_float)

    def start(self, builder: PartBuilder, name: str, parts: List[List[int]],
              labels: List[str]) -> Callable[[], List[CompiledPart]]:
        started = [start(builder, p, label) for p, label in zip(parts, labels)]
        return lambda: [result() for result in started]

    def node_times(self, builder: PartBuilder, part: List[int], made: CompiledPart) -> NodeTimes:
        return node_times(builder, part, made)

    def beside_search(self, builder: PartBuilder, graph: Dict[str, Any], settings: Settings) -> None:
        return None  # its compiles run before the search, in a process of their own (CPU only)

    def before_search(self, builder: PartBuilder, graph: Dict[str, Any], settings: Settings) -> Dict[str, Any]:
        if settings.precision == "int8" and int8_missing() is None:
            warm(builder, quantizer())  # NNCF imported while the float32 package it quantizes is made
        # The conversion in its process of its own: the longest step of an optimize on CPU (bert_base's).
        try:
            return {"whole_openvino": start(builder, every_node(graph), "whole_openvino part 1/1")}
        except Exception as e:  # noqa: BLE001 - the candidate is dropped and the report says why
            return {"whole_openvino": e}


COMPILER = OpenVinoCompiler()


__all__ = ["COMPILER", "NNCF_VERSION", "OpenVinoCompiler", "PART_OP", "FORMAT", "converter", "int8_missing",
           "missing", "model_types", "nncf_dir", "revert", "start_quantized", "transformer", "whole_transformer",
           "available", "node_times", "recurrent_nodes", "start", "start_package", "compile_package"]
