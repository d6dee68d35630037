"""A part's ONNX Runtime package quantized to INT8 by ONNX Runtime's static quantization, in a Python
process of its own that runs this file with the arguments FOLDER PATH (converter_process): it reads the
float32 package and the calibration inputs from its stdin (quantize_request.py), prepares the model as
ONNX Runtime's quantization guide asks (quant_pre_process: shapes inferred, the graph optimized; the model
as it is where that fails), quantizes it on the calibration inputs (RECIPE: QDQ format, weights INT8 per
channel, activations UINT8, min-max ranges) and writes the package at PATH. Its faults (a crash, a hang, a
model it cannot quantize) stay here. It imports nothing of autograph, nor torch."""
import os
import runpy
import sys
from typing import Any, Dict

# What ONNX Runtime recommends for x86 CPUs (VNNI: unsigned activations, signed weights).
RECIPE = {"format": "QDQ", "per_channel": True, "activations": "QUInt8", "weights": "QInt8", "ranges": "MinMax"}


def _beside(name: str) -> Dict[str, Any]:
    """The module `name`.py beside this file, run by path (this process has no autograph on its sys.path)."""
    return runpy.run_path(os.path.join(os.path.dirname(os.path.abspath(__file__)), f"{name}.py"))


def main(folder: str, path: str) -> int:
    import warnings
    warnings.simplefilter("ignore")
    read = _beside("quantize_request")["read"](sys.stdin.buffer.read())
    if read is None:
        print("the package was cut short", file=sys.stderr)
        return 1
    package, _, _, calls = read
    convert = _beside("onnxruntime_convert")
    magic = convert["MAGIC"]
    if not package.startswith(magic):
        print("not an autograph ONNX Runtime package", file=sys.stderr)
        return 1
    from onnxruntime.quantization import CalibrationDataReader, CalibrationMethod, QuantFormat, QuantType, quantize_static
    from onnxruntime.quantization.shape_inference import quant_pre_process
    import onnxruntime as ort
    model = os.path.join(folder, "model.onnx")
    with open(model, "wb") as f:
        f.write(package[len(magic):])
    names = [i.name for i in ort.InferenceSession(model, providers=["CPUExecutionProvider"]).get_inputs()]

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
    quantized = os.path.join(folder, "quantized.onnx")
    quantize_static(prepared, quantized, Reader(), quant_format=getattr(QuantFormat, RECIPE["format"]),
                    per_channel=RECIPE["per_channel"], activation_type=getattr(QuantType, RECIPE["activations"]),
                    weight_type=getattr(QuantType, RECIPE["weights"]),
                    calibrate_method=getattr(CalibrationMethod, RECIPE["ranges"]))
    with open(quantized, "rb") as f:
        convert["save_package"](f.read(), path)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
