"""A part's ONNX Runtime package quantized to INT8 by ONNX Runtime's static quantization, in a Python
process of its own that runs this file with the arguments FOLDER PATH (converter_process): it reads the
float32 package, the settings and the inputs from its stdin (quantize_request.py), prepares the model as
ONNX Runtime's quantization guide asks (quant_pre_process: shapes inferred, the graph optimized; the model
as it is where that fails), quantizes it on the calibration inputs (RECIPE: QDQ format, weights INT8 per
channel, activations UINT8, min-max ranges) and writes the package at PATH. With PATH "-"
(converter_process.Spare: started before its part is known) it imports its quantizer first, then reads the
path from its stdin's first line. Where its quantizer fails on
the model with that recipe, the first quantization settles another (_settle: without its bias adjustment,
then one scale per weight tensor).

With an aim (a built-in measure, its bound and autograph's library, which computes it: quantize_aim), where
the quantized model's outputs on the judged inputs (the example's and the calibration inputs) miss the bound
of the float32 model's, its quantized operations are kept float32 one at a time (nodes_to_exclude), those
whose INT8 costs the measure most first (each ranked by the model with it alone in float32, read off the
quantized model with its quantization turned back, qdq_in_float, rather than quantized again; one that alone
brings the model within the bound ends the ranking), until they are within it: as NNCF's accuracy control
does for OpenVINO's packages, on a model of at most RANKED_AT_MOST such operations. A try estimated within
the bound is quantized (nodes_to_exclude) and judged before it is kept. The ranges are calibrated once (ONNX
Runtime's calibration cache) for every try.
Its faults (a crash, a hang, a model it cannot quantize) stay here. It imports nothing of autograph, and
torch only with an aim (for autograph's library)."""
import os
import runpy
import sys
import time
from typing import Any, Callable, Dict, List, Sequence, Tuple

# What ONNX Runtime recommends for x86 CPUs (VNNI: unsigned activations, signed weights).
RECIPE = {"format": "QDQ", "per_channel": True, "activations": "QUInt8", "weights": "QInt8", "ranges": "MinMax"}
# The option that turns off the quantizer's weight-scale adjustment for INT32 biases: tried where the
# quantization raises with it on.
NO_BIAS_ADJUSTMENT = "QDQDisableWeightAdjustForInt32Bias"
# The quantized operations the aim does not rank: they only move or select their input's values, their
# outputs quantized as their input is (kept float32 alone, they changed nothing on a CREPE model, while its
# normalizations, activations and layers did: a batch normalization's INT8 outputs cost most there).
MOVES = ("Flatten", "Gather", "GatherElements", "MaxPool", "Pad", "Reshape", "Resize", "Slice", "Split", "Squeeze",
         "TopK", "Transpose", "Unsqueeze")
# At most this many operations are ranked (each rank quantizes and runs the model once more), and at most
# RESTORED_AT_MOST kept float32: as NNCF's accuracy control for OpenVINO's (openvino_quantize).
RANKED_AT_MOST = 32
RESTORED_AT_MOST = 8
# And no try starts after this many seconds of them: the process's own time limit (QUANTIZE_TIMEOUT_S, 600 s)
# would drop the candidate with nothing said of the aim; this way it leaves with its loss in the report.
AIMED_FOR_AT_MOST_S = 240.0


def _beside(name: str) -> Dict[str, Any]:
    """The module `name`.py beside this file, run by path (this process has no autograph on its sys.path)."""
    return runpy.run_path(os.path.join(os.path.dirname(os.path.abspath(__file__)), f"{name}.py"))


def main(folder: str, path: str) -> int:
    import warnings
    warnings.simplefilter("ignore")
    # First: a process started before its part is known imports them meanwhile.
    from onnxruntime.quantization import CalibrationDataReader, CalibrationMethod, QuantFormat, QuantType, quantize_static
    from onnxruntime.quantization.shape_inference import quant_pre_process
    try:  # what quant_pre_process imports at its first call (torch among them: seconds)
        from onnxruntime.tools.symbolic_shape_infer import SymbolicShapeInference  # noqa: F401
    except ImportError:
        pass
    if path == "-":
        path = sys.stdin.buffer.readline().decode().rstrip("\n")
    read = _beside("quantize_request")["read"](sys.stdin.buffer.read())
    if read is None or not path:
        print("the package was cut short", file=sys.stderr)
        return 1
    package, settings, judged, calls = read
    convert = _beside("onnxruntime_convert")
    magic = convert["MAGIC"]
    if not package.startswith(magic):
        print("not an autograph ONNX Runtime package", file=sys.stderr)
        return 1
    model = os.path.join(folder, "model.onnx")
    with open(model, "wb") as f:
        f.write(package[len(magic):])
    names = [i.name for i in _session(model).get_inputs()]

    class Reader(CalibrationDataReader):
        def __init__(self):
            self.feeds = iter([dict(zip(names, call)) for call in calls])

        def get_next(self):
            return next(self.feeds, None)

    prepared = os.path.join(folder, "prepared.onnx")
    try:
        quant_pre_process(model, prepared)
    except Exception:  # noqa: BLE001 - the quantizer takes the model as it is too
        prepared = model
    quantized, ranges = os.path.join(folder, "quantized.onnx"), os.path.join(folder, "ranges.json")

    recipe: Dict[str, Any] = {"per_channel": RECIPE["per_channel"], "extra": {}, "settled": False}

    def quantize(in_float: Sequence[str]) -> str:
        def run() -> None:
            quantize_static(prepared, quantized, Reader(), quant_format=getattr(QuantFormat, RECIPE["format"]),
                            per_channel=recipe["per_channel"], activation_type=getattr(QuantType, RECIPE["activations"]),
                            weight_type=getattr(QuantType, RECIPE["weights"]),
                            calibrate_method=getattr(CalibrationMethod, RECIPE["ranges"]),
                            nodes_to_exclude=list(in_float), calibration_cache_path=ranges,
                            extra_options=recipe["extra"])
        if recipe["settled"]:
            run()
            return quantized
        _settle(recipe, run, lambda: _session(quantized).run(None, dict(zip(names, calls[0]))))
        return quantized
    if settings.get("aim") and judged:
        _aimed(prepared, quantize, [dict(zip(names, call)) for call in judged],
               dict(settings["aim"], library=settings["library"]))
    else:
        quantize([])
    with open(quantized, "rb") as f:
        convert["save_package"](f.read(), path)
    return 0


def _settle(recipe: Dict[str, Any], run: Callable[[], None], check: Callable[[], Any]) -> None:
    """The first quantization (`run`), the recipe changed where ONNX Runtime's quantizer fails on the model:
    its scale adjustment for INT32 biases raises on a per-channel weight whose bias is computed (a 1-d
    convolution's in a pitch estimator's exported graph), so it goes (NO_BIAS_ADJUSTMENT); a model it wrote
    that its own runtime refuses (`check`: per-channel scales of a 2-d weight of one row that its
    DequantizeLinear will not broadcast) is quantized again with one scale per weight tensor."""
    try:
        run()
    except ValueError:
        recipe["extra"] = {NO_BIAS_ADJUSTMENT: True}
        run()
    try:
        check()
    except Exception:  # noqa: BLE001 - ONNX Runtime's own error: the model it wrote does not run
        recipe["per_channel"] = False
        run()
        check()
    recipe["settled"] = True


def _session(model):  # a path, or the model's bytes
    import onnxruntime as ort
    return ort.InferenceSession(model, providers=["CPUExecutionProvider"])


def _aimed(prepared: str, quantize: Callable[[Sequence[str]], str], feeds: List[Dict[str, Any]],
           aim: Dict[str, Any]) -> None:
    """The model quantized (at quantize's path), then again with operations kept float32, until its outputs on
    `feeds` are within the aim's bound of `prepared`'s (float32): the quantized operations (less MOVES) ranked
    by how far the model with each alone float32 is from them (one within the bound is the answer), then
    kept float32 in that order (at most RESTORED_AT_MOST; on a model of at most RANKED_AT_MOST of them; no try
    started after AIMED_FOR_AT_MOST_S). The ranking and the estimates of each try read the quantized model
    with those operations turned back (qdq_in_float: no quantization per try; an activation folded into its
    producer is ranked with it); a try estimated within the bound is quantized and judged to be kept. Where
    none is within the bound, the last try stays: the contest drops it."""
    import onnx
    from onnxruntime.quantization.registry import QDQRegistry, QLinearOpsRegistry
    loss_of = _beside("quantize_aim")["loss_by"](aim)
    reference = _session(prepared)
    want = [reference.run(None, feed) for feed in feeds]
    at_path: Dict[str, Any] = {}  # the model at quantize's path: "path", and its operations in float32

    def judged(session) -> float:
        return loss_of([session.run(None, feed) for feed in feeds], want)

    def loss(in_float: Sequence[str]) -> float:
        at_path.update(path=quantize(in_float), in_float=list(in_float))
        return judged(_session(at_path["path"]))

    if loss([]) <= aim["bound"]:
        return
    original = onnx.load(prepared)
    quantized = (set(QDQRegistry) | set(QLinearOpsRegistry)) - set(MOVES)
    ops = [n.name for n in original.graph.node if n.op_type in quantized and n.name]
    if len(ops) > RANKED_AT_MOST:
        print(f"nothing kept float32: {len(ops)} operations to rank, more than {RANKED_AT_MOST}", file=sys.stderr)
        return  # quantize([])'s model is at its path
    stand_in = _stand_in(at_path["path"], original)

    def estimate(in_float: Sequence[str]) -> Tuple[float, bool]:
        """The loss with `in_float` in float32, read off the stand-in (False) or quantized (True): where the
        stand-in cannot turn them back, or ONNX Runtime refuses what it wrote."""
        data = None if stand_in is None else stand_in.model(in_float)
        if data is not None:
            try:
                return judged(_session(data)), False
            except Exception:  # noqa: BLE001 - ONNX Runtime's own error: quantized instead
                pass
        return loss(in_float), True

    def met(in_float: Sequence[str], value: float, exact: bool) -> bool:  # an estimate within is quantized
        return value <= aim["bound"] and (exact or loss(in_float) <= aim["bound"])

    ends = time.monotonic() + AIMED_FOR_AT_MOST_S
    losses: Dict[str, float] = {}
    for op in [op for op in ops if stand_in is None or stand_in.covers(op)]:
        if time.monotonic() > ends:
            print(f"ranked {len(losses)} of {len(ops)} operations in {AIMED_FOR_AT_MOST_S:.0f} s", file=sys.stderr)
            break
        losses[op], exact = estimate([op])
        if met([op], losses[op], exact):
            return
    in_float: List[str] = []
    for op in sorted(losses, key=losses.get)[:RESTORED_AT_MOST]:
        if time.monotonic() > ends:
            break
        in_float.append(op)
        if met(in_float, *estimate(in_float)):
            return
    if at_path["in_float"] != in_float:
        quantize(in_float)  # the last try stays at quantize's path


def _stand_in(path: str, original):
    """The quantized model at `path` (quantized from ModelProto `original`) as qdq_in_float reads it, to turn
    operations back to float32 without quantizing again; None where it cannot be read (each try quantized)."""
    import onnx
    try:
        return _beside("qdq_in_float")["InFloat"](onnx.load(path), original)
    except Exception as error:  # noqa: BLE001 - the tries are quantized, as without it
        print(f"each try quantized: the quantized model could not be read ({error})", file=sys.stderr)
        return None


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
