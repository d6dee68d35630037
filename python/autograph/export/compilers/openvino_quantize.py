"""A part's OpenVINO package quantized to INT8 by NNCF's post-training quantization, in a Python process of
its own that runs this file with the arguments FOLDER PATH (converter_process): it reads from its stdin
the float32 package and the request's settings (each a byte count, 8 bytes little-endian, then the bytes;
the settings JSON) and the calibration inputs (an .npz archive, "c{k}_{i}": input i of calibration call
k), quantizes the model on them (activations and weights of the convolutions and matmuls to INT8, the
rest float32; a transformer's as NNCF quantizes transformers) and writes the package at PATH.

Without an aim, by the most accurate of RECIPES. With one (a built-in accuracy measure, its bound and
autograph's library, which computes it), by the first of RECIPES whose outputs on the calibration inputs
are within the bound of the float32 model's, else by NNCF's accuracy control, which returns layers to
float32, those that cost the measure most first, until they are.

NNCF lives apart from autograph's environment, in the folder named by AUTOGRAPH_NNCF_DIR (scripts/setup.sh
installs it there), appended to this process's sys.path alone: its dependency tabulate, importable in a
process that imported torch, turns an unhandled Ctrl-C's exit into status 1 instead of the signal's
(torch's exit handler imports it), which autograph's own process keeps. It imports nothing of autograph."""
import importlib.util
import io
import json
import os
import struct
import sys
from typing import Any, Dict, List, Optional, Sequence

_LENGTH = struct.Struct("<Q")

# NNCF's presets tried in order, the fastest first, each with its full bias correction (free at run time:
# only the biases change). Its defaults (fast bias correction) on the IR of trained models' parts missed a
# cosine bound of 0.001 where these met it (mtcnn_onet 0.0052, full bias correction 0.00096); its mixed
# preset (asymmetric activations: a PReLU's or an addition's outputs are signed) is the more accurate
# (0.00065 there, mtcnn_pnet 0.0048 against 0.0074).
RECIPES = [{"preset": "PERFORMANCE", "fast_bias_correction": False},
           {"preset": "MIXED", "fast_bias_correction": False}]


def request(package: bytes, calibration: List[List["numpy.ndarray"]],  # noqa: F821
            aim: Optional[Dict[str, Any]] = None, transformer: bool = False,
            judged: Sequence[List["numpy.ndarray"]] = ()) -> List[bytes]:  # noqa: F821
    """What this process reads on its stdin: the float32 package, the settings (the aim: {"measure": a
    built-in's name, "bound": its largest loss, "library": libautograph.so's path}, or None; whether the
    part is a transformer's; how many of the inputs are judged only) and the inputs: `judged` (the
    example's, judged by the aim, not calibrated on), then the calibration inputs."""
    import numpy as np
    archive = io.BytesIO()
    calls = list(judged) + list(calibration)
    np.savez(archive, **{f"c{k}_{i}": a for k, call in enumerate(calls) for i, a in enumerate(call)})
    settings = json.dumps({"aim": aim, "transformer": transformer, "judged": len(judged)}).encode()
    return [_LENGTH.pack(len(package)), package, _LENGTH.pack(len(settings)), settings, archive.getvalue()]


def _sections(data: bytes, count: int) -> Optional[List[bytes]]:
    """`count` sized sections of `data` (as request writes them) and the rest, or None where it is cut short."""
    out, at = [], 0
    for _ in range(count):
        if len(data) < at + _LENGTH.size:
            return None
        (size,) = _LENGTH.unpack_from(data, at)
        at += _LENGTH.size
        if len(data) < at + size:
            return None
        out.append(data[at:at + size])
        at += size
    return out + [data[at:]]


def _convert_module():
    """openvino_convert.py beside this file (the package format), loaded by path: this process has no
    autograph on its sys.path."""
    spec = importlib.util.spec_from_file_location("autograph_openvino_convert",
                                                  os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                                               "openvino_convert.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _calls(archive: bytes) -> List[List["numpy.ndarray"]]:  # noqa: F821
    import numpy as np
    with np.load(io.BytesIO(archive)) as loaded:
        named: Dict[str, "numpy.ndarray"] = {k: loaded[k] for k in loaded.files}  # noqa: F821
    calls: Dict[int, Dict[int, "numpy.ndarray"]] = {}  # noqa: F821
    for key, array in named.items():
        k, i = key[1:].split("_")
        calls.setdefault(int(k), {})[int(i)] = array
    return [[call[i] for i in sorted(call)] for _, call in sorted(calls.items())]


def main(folder: str, path: str) -> int:
    import warnings
    warnings.simplefilter("ignore")
    where = os.environ.get("AUTOGRAPH_NNCF_DIR", "")
    if where:
        sys.path.append(where)  # after autograph's environment: its numpy and OpenVINO stay the ones used
    sections = _sections(sys.stdin.buffer.read(), 2)
    if sections is None:
        print("the package was cut short", file=sys.stderr)
        return 1
    package, settings, archive = sections
    convert = _convert_module()
    xml, weights = convert.read_package(package)
    import nncf
    import openvino as ov
    model = ov.Core().read_model(model=xml, weights=ov.Tensor(weights))
    settings = json.loads(settings)
    judged = _calls(archive)
    calls = judged[settings["judged"]:]
    kind = {"model_type": nncf.ModelType.TRANSFORMER} if settings["transformer"] else {}

    def recipe(k: int) -> Dict[str, Any]:
        return dict(subset_size=len(calls), preset=getattr(nncf.QuantizationPreset, RECIPES[k]["preset"]),
                    fast_bias_correction=RECIPES[k]["fast_bias_correction"], **kind)

    if settings["aim"]:
        quantized = _aimed(nncf, model, calls, judged, settings["aim"], [recipe(k) for k in range(len(RECIPES))])
    else:
        quantized = nncf.quantize(model, nncf.Dataset(calls), **recipe(len(RECIPES) - 1))
    convert.save_package(quantized, path, inside=folder)
    return 0


def _aimed(nncf, model, calls: List[List["numpy.ndarray"]], judged: List[List["numpy.ndarray"]],  # noqa: F821
           aim: Dict[str, Any], recipes: List[Dict[str, Any]]):
    """`model` quantized on `calls` by the first of `recipes` within the aim's bound, else by NNCF's accuracy
    control with the last. The validation is 1 - the aim's measure (autograph's own, core/output_error,
    through its library) of the outputs on the `judged` inputs (the example's and the calibration inputs,
    as the contest judges) against the float32 model's."""
    import numpy as np
    import openvino as ov
    import torch
    from nncf.quantization.advanced_parameters import AdvancedAccuracyRestorerParameters
    torch.ops.load_library(aim["library"])
    core = ov.Core()
    reference = core.compile_model(model, "CPU", {"INFERENCE_PRECISION_HINT": "f32"})
    want = {id(call): [torch.from_numpy(np.array(o)) for o in reference(call).to_tuple()] for call in judged}

    def validate(compiled, items) -> float:  # NNCF passes the dataset, or the items it ranks on
        got, wanted = [], []
        for call in items:
            got.extend(torch.from_numpy(np.array(o)) for o in compiled(call).to_tuple())
            wanted.extend(want[id(call)])
        count = len(got) // max(1, len(reference.outputs))
        return 1.0 - torch.ops.autograph.measure_outputs(aim["measure"], got, wanted, count)[0]

    dataset = nncf.Dataset(calls)
    for recipe in recipes:
        quantized = nncf.quantize(model, dataset, **recipe)
        if 1.0 - validate(core.compile_model(quantized, "CPU", {"INFERENCE_PRECISION_HINT": "f32"}), judged) <= aim["bound"]:
            return quantized
    return nncf.quantize_with_accuracy_control(
        model, dataset, nncf.Dataset(judged), validate, max_drop=aim["bound"],
        advanced_accuracy_restorer_parameters=AdvancedAccuracyRestorerParameters(num_ranking_workers=1),
        **recipes[-1])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
