"""The tools a user would pick instead of autograph, as runnable callables for the benchmarks: ONNX
Runtime (CPU execution provider, default sequential executor, all graph optimizations) and OpenVINO
(latency hint, f32 precision), both from one ONNX export of the model (torch.onnx.export, the dynamo exporter;
where it fails, the TorchScript-based one, as a user would try next: it traces a number read off a tensor,
`.item()`, as a constant where the dynamo exporter leaves it to run time and fails); where both fail,
OpenVINO converts the module itself (`openvino.convert_model`, its PyTorch frontend) and ONNX Runtime has
no row.

Each maker returns (run, compile seconds) where run() takes no arguments and returns the outputs as
torch tensors (a numpy round trip included: what a user of these runtimes pays too), or raises; the
optional packages (onnxruntime, openvino, onnxscript) are installed by `pip install onnxruntime
openvino onnxscript onnx` and a missing one is reported by the caller, never faked.
"""
import os
import time
from pathlib import Path
from typing import Any, Callable, List, Optional, Sequence, Tuple

import torch


def export_onnx(model: torch.nn.Module, inputs: Sequence[torch.Tensor], path: Path) -> float:
    """Writes `path` (opset the exporter picks, weights inside); returns the seconds it took."""
    start = time.perf_counter()
    with torch.no_grad():
        try:
            torch.onnx.export(model, tuple(inputs), str(path), dynamo=True, external_data=False, verbose=False)
        except Exception as dynamo:  # noqa: BLE001 - the TorchScript-based exporter next
            try:
                torch.onnx.export(model, tuple(inputs), str(path), dynamo=False, verbose=False)
            except Exception as legacy:  # noqa: BLE001 - both exporters' reasons, for the row
                raise RuntimeError(f"dynamo exporter: {_first_line(dynamo)}; TorchScript-based exporter: "
                                   f"{_first_line(legacy)}") from None
    return time.perf_counter() - start


def _first_line(e: Exception) -> str:
    """The line that says why: the dynamo exporter's summary ("<class ...DispatchError'>: No ONNX function
    found for ..."), else the message's first line."""
    lines = [line for line in str(e).splitlines() if line.strip()]
    said = [line.split(">: ", 1)[1] for line in lines if line.startswith("<class ") and ">: " in line]
    return (said[0] if said else lines[0] if lines else type(e).__name__)[:200]


def _as_torch(outputs) -> List[torch.Tensor]:
    return [torch.from_numpy(o) if not isinstance(o, torch.Tensor) else o for o in outputs]


def onnxruntime_session(path: Path):
    """ONNX Runtime's CPU provider on the model at `path`, configured as every benchmark runs it."""
    import onnxruntime as ort
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL  # its parallel mode is slower on few cores
    # Its idle threads otherwise spin after each run and slow whatever runs next (methods alternate)
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    return ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])


def onnxruntime_runner(path: Path, inputs: Sequence[torch.Tensor]) -> Tuple[Callable[[], List[torch.Tensor]], float]:
    start = time.perf_counter()
    session = onnxruntime_session(path)
    names = [i.name for i in session.get_inputs()]
    feeds = {n: t.detach().cpu().numpy() for n, t in zip(names, inputs)}
    session.run(None, feeds)  # the first run finishes the session's setup
    return (lambda: _as_torch(session.run(None, feeds))), time.perf_counter() - start


def openvino_runner(path: Any, inputs: Sequence[torch.Tensor],
                    precision: Optional[str] = "f32") -> Tuple[Callable[[], List[torch.Tensor]], float]:
    """`path`: the ONNX file, or a model OpenVINO converted already. `precision`: OpenVINO's
    INFERENCE_PRECISION_HINT (f32 by default: on CPUs with bf16 units OpenVINO otherwise computes in bf16);
    None leaves OpenVINO's own default."""
    import openvino as ov
    start = time.perf_counter()
    core = ov.Core()
    config = {"PERFORMANCE_HINT": "LATENCY"}
    if precision is not None:
        config["INFERENCE_PRECISION_HINT"] = precision
    model = core.read_model(str(path)) if isinstance(path, Path) else path
    compiled = core.compile_model(model, "CPU", config)
    request = compiled.create_infer_request()
    feeds = [t.detach().cpu().numpy() for t in inputs]
    request.infer(feeds)

    def run():
        result = request.infer(feeds)
        return _as_torch([result[o] for o in compiled.outputs])

    return run, time.perf_counter() - start


def openvino_model(model: torch.nn.Module, inputs: Sequence[torch.Tensor]):
    """`model` converted by OpenVINO's PyTorch frontend (it traces the module), for where no ONNX export runs."""
    import openvino as ov
    with torch.no_grad():
        return ov.convert_model(model, example_input=tuple(inputs))


def rivals(model: torch.nn.Module, inputs: Sequence[torch.Tensor], workdir: Path):
    """{name: (run, seconds to get it ready)} for each rival that runs here, and {name: why not}."""
    made, missing = {}, {}
    onnx_path = workdir / "model.onnx"
    try:
        export_s = export_onnx(model, inputs, onnx_path)
    except Exception as e:  # noqa: BLE001 - the row says why
        reason = f"ONNX export failed: {str(e).splitlines()[0][:400] if str(e) else type(e).__name__}"
        missing["onnxruntime"] = reason
        # OpenVINO converts the module itself too (its PyTorch frontend, by tracing), as its users do.
        try:
            start = time.perf_counter()
            run, ready_s = openvino_runner(openvino_model(model, inputs), inputs)
            made["openvino"] = (run, time.perf_counter() - start)
        except Exception as direct:  # noqa: BLE001 - the row says why
            missing["openvino"] = f"{reason}; its PyTorch frontend: {_first_line(direct)}"
        return made, missing
    for name, maker in (("onnxruntime", onnxruntime_runner), ("openvino", openvino_runner)):
        try:
            run, ready_s = maker(onnx_path, inputs)
            made[name] = (run, export_s + ready_s)
        except ImportError as e:
            missing[name] = f"not installed ({e.name}): pip install onnxruntime openvino onnxscript onnx"
        except Exception as e:  # noqa: BLE001 - the row says why
            missing[name] = f"{type(e).__name__}: {str(e).splitlines()[0][:160] if str(e) else ''}"
    if onnx_path.exists():
        os.remove(onnx_path)
    return made, missing
