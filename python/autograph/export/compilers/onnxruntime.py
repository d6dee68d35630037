"""Parts compiled by ONNX Runtime (export path, CPU): a third candidate compiler beside Inductor and
OpenVINO.

ONNX Runtime's CPU provider runs some models well ahead of the others (large convolutions over long 1-D
signals, in audio networks). A part is exported to ONNX by torch.onnx in autograph's process (onnx_export:
once per part, shared with OpenVINO's converter), optimized by ONNX Runtime's basic graph rewrites in a
process of its own that runs beside the other compilers' work (onnxruntime_convert.py: a model it cannot
load, a crash or a hang is dropped there with the reason) and packed into one uint8 tensor. In the program
it becomes one ``autograph::run_onnxruntime_part`` call, which libautograph_onnxruntime.so runs through
ONNX Runtime's C++ API (no Python at run time) with all its graph optimizations on and the program's
threads. Like every candidate it is kept only where the whole program measures faster, and its parts mix
with the other compilers' part by part where that is faster (mixing.py). Packages are cached on disk
beside the others' (export/cache.py), keyed by the part's graph, its weights and the ONNX Runtime and
torch versions. With option precision int8 its whole graph competes once more quantized by ONNX Runtime's
static quantization (QDQ) on the calibration inputs, in a process of its own (onnxruntime_quantize.py).
"""
import functools
import json
import logging
import os
import tempfile
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import torch

from ..._library import runner_missing
from ...errors import Error
from ...settings import Settings
from .. import cache as part_cache
from ..parts import CompiledPart, NodeTimes, PartBuilder, every_node, part_digest, run_profiled, whole_graph_part
from . import converter_process
from . import onnx_export
from . import onnx_profile
from . import onnxruntime_convert as _convert
from . import onnxruntime_quantize
from .converter_process import Converter, PendingPackage
from .quantized_part import aim_of, in_turn, start_quantized_package, warm

PART_OP = "autograph::run_onnxruntime_part"
FORMAT = "autograph-onnxruntime-part"
_SUFFIX = ".ortpart"
# How long the converter process may take: a hung one must not hang optimize (the candidate is then
# dropped, and the report says why). Its load takes seconds on the largest zoo model.
CONVERT_TIMEOUT_S = 600.0
QUANTIZE_TIMEOUT_S = 600.0
logger = logging.getLogger("autograph")


def missing() -> Optional[str]:
    """Why ONNX Runtime parts cannot be built and run in this process, or None where they can."""
    return runner_missing("onnxruntime")


def converter() -> Converter:
    """ONNX Runtime's converter process (read at each start: its file and timeout are looked up then)."""
    return Converter("ONNX Runtime", _convert.__file__, _convert.MAGIC, _SUFFIX, CONVERT_TIMEOUT_S, sized=False)


def _version() -> str:
    try:
        from importlib.metadata import version
        return version("onnxruntime")
    except Exception:  # noqa: BLE001 - the runner's library is what runs the package; its folder names it
        return "unknown"


def start(builder: PartBuilder, part: Sequence[int], label: str, alone: bool = False) -> Callable[[], CompiledPart]:
    """Starts making `part` of the builder's graph an ONNX Runtime package (start_package); the returned
    call waits for it and returns the part compiled. The builder's close stops a conversion nobody waited
    for. `alone`: the part is the whole program, so its thread pool may spin between its operators'
    parallel work (nothing else needs the cores meanwhile: a quarter faster on a small model); a part
    beside others' sleeps between calls, leaving the cores to them."""
    exported = onnx_export.exported_part(builder, part)
    pending = start_package(exported.module, exported.examples, label, builder.progress, builder.weight_digests,
                            onnx=exported.onnx)
    builder.keep_until_close(pending)
    runner = {"spinning": True} if alone else None
    return lambda: CompiledPart(pending.result(), exported.input_ids, exported.output_ids, PART_OP, FORMAT,
                                runner=runner)


def start_package(gm: torch.fx.GraphModule, examples: Sequence[torch.Tensor], label: str = "part",
                  progress=None, digests: Optional[Dict[Any, Any]] = None,
                  onnx: Optional[Callable[[], bytes]] = None) -> PendingPackage:
    """Starts making the part `gm` an ONNX Runtime package: from the disk cache when there; else its ONNX
    model (`onnx`, else torch.onnx's export here; a part it cannot export raises) goes to the converter's
    process. Where that process cannot start or fails, the package is the model as exported (the runner's
    own optimizations still apply when it loads)."""
    why = missing()
    if why:
        raise Error(f"ONNX Runtime parts are not available: {why}")
    configs = {"compiler": "onnxruntime", "via": "onnx, as exported", "version": _version()}
    content = part_digest(gm, examples, torch.device("cpu"), configs, digests)
    entry = part_cache.key("onnxruntime-part", torch.device("cpu"), configs, content)
    cached = part_cache.read(entry, _SUFFIX)
    if cached is not None:
        return PendingPackage(package=cached)
    if progress:
        progress(f"compiling {label} with ONNX Runtime")
    pending = converter_process.start_process(converter(), entry)
    try:
        model = onnx() if onnx is not None else onnx_export.onnx_of(gm, examples)
    except BaseException:
        pending.close()
        raise
    pending.converts_here(functools.partial(_convert.save_package, model, pending.path))
    pending.send(_convert.onnx_header(len(model)), model)
    return pending


def int8_missing() -> Optional[str]:
    """Why ONNX Runtime's parts cannot be quantized to INT8 here, or None where they can."""
    why = missing()
    if why:
        return why
    import importlib.util
    for module in ("onnxruntime.quantization", "onnx"):
        try:
            if importlib.util.find_spec(module) is None:
                return f"{module} is not installed (pip install onnxruntime onnx)"
        except ImportError as e:
            return f"{module} cannot be found: {e}"
    return None


def quantizer() -> Converter:
    """ONNX Runtime's quantizing process (onnxruntime_quantize.py), its packages ONNX Runtime's."""
    return Converter("ONNX Runtime quantizer", onnxruntime_quantize.__file__, _convert.MAGIC, _SUFFIX,
                     QUANTIZE_TIMEOUT_S, sized=False, early=True)


def start_quantized(builder: PartBuilder, made: CompiledPart, part: Sequence[int],
                    label: str) -> Callable[[], CompiledPart]:
    """Starts quantizing `made` (`part`'s float32 package) to INT8 by ONNX Runtime's static quantization
    (QDQ) on the part's inputs at each calibration input, in a process of its own (onnxruntime_quantize;
    quantized_part.start_quantized_package); the returned call waits for the part. Where the part is the
    whole graph, its outputs the program's, and the builder has an aim (a built-in measure and its bound),
    operations are kept float32 until the outputs on the example and calibration inputs meet it. Its spec's
    precision is "int8": the runner runs the QDQ model."""
    why = int8_missing()
    if why:
        raise Error(f"ONNX Runtime's int8 parts are not available: {why}")
    aim, judged = aim_of(builder, made, part)
    configs = {"compiler": "onnxruntime", "via": "quantize_static", "recipe": onnxruntime_quantize.RECIPE,
               "moves": onnxruntime_quantize.MOVES, "ranked_at_most": onnxruntime_quantize.RANKED_AT_MOST,
               "restored_at_most": onnxruntime_quantize.RESTORED_AT_MOST,
               "aimed_for_at_most_s": onnxruntime_quantize.AIMED_FOR_AT_MOST_S, "version": _version()}
    wait = start_quantized_package(quantizer(), "onnxruntime-int8-part", builder, made, label, configs, {"aim": aim},
                                   judged)
    return lambda: made._replace(package=wait(), precision="int8")


def compile_package(gm: torch.fx.GraphModule, examples: Sequence[torch.Tensor], label: str = "part") -> bytes:
    """The part `gm` as an ONNX Runtime package (start_package, waited for)."""
    return start_package(gm, examples, label).result()


def node_times(builder: PartBuilder, part: Sequence[int], made: CompiledPart) -> NodeTimes:
    """Where one run of `part`, compiled (`made`), spends its time, node by node: ONNX Runtime's own profiler on a
    session made as the runner makes it (all graph optimizations, the program's threads, spinning as
    its spec says), over runs on the part's example inputs (parts.run_profiled), read back to the graph's nodes
    (onnx_profile). Its Python package runs it in this process: the package loaded and ran here already."""
    import onnxruntime as ort
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    options.intra_op_num_threads = max(1, torch.get_num_threads())
    options.inter_op_num_threads = 1
    options.log_severity_level = 3
    spinning = bool(made.runner and made.runner.get("spinning"))
    options.add_session_config_entry("session.intra_op.allow_spinning", "1" if spinning else "0")
    options.enable_profiling = True
    with tempfile.TemporaryDirectory(prefix="autograph-onnxruntime-profile-") as folder:
        options.profile_file_prefix = os.path.join(folder, "profile")
        session = ort.InferenceSession(made.package[len(_convert.MAGIC):], options, providers=["CPUExecutionProvider"])
        feeds = {i.name: t.contiguous().numpy() for i, t in zip(session.get_inputs(), builder.examples(made.input_ids))}
        session.run(None, feeds)
        run_profiled(lambda: session.run(None, feeds))
        with open(session.end_profiling()) as f:
            events = json.load(f)
    runs = sorted(e["ts"] + e["dur"] for e in events if e.get("cat") == "Session" and e.get("name") == "model_run")
    after_first = runs[0] if runs else 0
    kernels = sorted((e["ts"], e["name"][:-len("_kernel_time")], e["dur"]) for e in events
                     if e.get("cat") == "Node" and e.get("name", "").endswith("_kernel_time") and e["ts"] >= after_first)
    return onnx_profile.part_times(builder, part, (([name], float(us)) for _, name, us in kernels))


class OnnxRuntimeCompiler:
    """ONNX Runtime's candidates (compilers/base.Compiler): "whole_onnxruntime", the graph as one part, on
    CPU, and its parts where they mix with other compilers' (mixing.py); each part converted in a process
    of its own (start), beside the other compilers' work."""
    name = "ONNX Runtime"
    option = "onnxruntime"
    label = "onnxruntime"
    lowers_by_parts = False  # its whole graph alone is quantized: a part's own quantization costs its process
    mixes_parts = True
    compiles_apart = True
    lowers_apart = ("int8",)  # its static quantization
    reverts = ()  # its whole graph in int8 is not lowered by parts (lowers_by_parts)

    def missing(self) -> Optional[str]:
        return missing()

    def offers(self, builder: PartBuilder, graph: Dict[str, Any], body: Dict[str, Any], settings: Settings,
               plan_unverified: bool) -> Dict[str, List[List[int]]]:
        return {"whole_onnxruntime": whole_graph_part(body)} if builder.device.type == "cpu" else {}

    def lowered(self, device: torch.device, precision: str, candidate: str) -> List[str]:
        # int8: the model quantized by its static quantization (QDQ). Not bf16 or fp16: its CPU provider has
        # no bfloat16 kernels for convolutions and matmuls, and its float16 model ran no faster than its
        # float32 one on an x86 CPU (bench/results/precision-2026-11-28c-cpu).
        return ["int8"] if device.type == "cpu" and precision == "int8" and int8_missing() is None else []

    def lowering(self) -> str:
        why = int8_missing()
        return ("ONNX Runtime's candidates to int8 by its static quantization, else float32 (its CPU provider "
                "computes no faster in bf16 or fp16)" + (f" (int8 not here: {why})" if why else ""))

    def variants(self, builder: PartBuilder, parts: List[List[int]], precision: str) -> Tuple[str, ...]:
        return ("",)

    def lower(self, builder: PartBuilder, name: str, parts: List[List[int]], labels: List[str],
              compiled: List[CompiledPart], precision: str, variant: str = "") -> Callable[[], List[CompiledPart]]:
        if precision != "int8":
            raise Error(f"ONNX Runtime's parts are not lowered to {precision}")
        builder.calibration_examples_of([c.input_ids for c in compiled])  # one run of the graph for all
        return in_turn([functools.partial(start_quantized, builder, c, part, label)
                        for c, part, label in zip(compiled, parts, labels)])

    def revert(self, builder: PartBuilder, part: Sequence[int], lowered: CompiledPart, float32: CompiledPart,
               in_float: Sequence[int]) -> CompiledPart:
        raise Error(f"{self.name} turns no operation of a lowered part back to float32 (reverts)")

    def start(self, builder: PartBuilder, name: str, parts: List[List[int]],
              labels: List[str]) -> Callable[[], List[CompiledPart]]:
        alone = name == "whole_onnxruntime"
        started = [start(builder, p, label, alone) for p, label in zip(parts, labels)]
        return lambda: [result() for result in started]

    def node_times(self, builder: PartBuilder, part: List[int], made: CompiledPart) -> NodeTimes:
        return node_times(builder, part, made)

    def beside_search(self, builder: PartBuilder, graph: Dict[str, Any], settings: Settings) -> None:
        return None  # its compiles run before the search, in a process of their own (CPU only)

    def before_search(self, builder: PartBuilder, graph: Dict[str, Any], settings: Settings) -> Dict[str, Any]:
        if settings.precision == "int8" and int8_missing() is None:
            warm(builder, quantizer())  # its quantizer imported while the float32 package it quantizes is made
        try:
            return {"whole_onnxruntime": start(builder, every_node(graph), "whole_onnxruntime part 1/1", alone=True)}
        except Exception as e:  # noqa: BLE001 - the candidate is dropped and the report says why
            return {"whole_onnxruntime": e}


COMPILER = OnnxRuntimeCompiler()


__all__ = ["COMPILER", "OnnxRuntimeCompiler", "PART_OP", "FORMAT", "converter", "int8_missing", "missing",
           "node_times", "start_quantized", "quantizer", "start", "start_package", "compile_package"]
