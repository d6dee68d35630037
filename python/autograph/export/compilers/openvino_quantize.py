"""A part's OpenVINO package quantized to INT8 by NNCF's post-training quantization, in a Python process of
its own that runs this file with the arguments FOLDER PATH (converter_process): it reads from its stdin
the float32 package (its byte count, 8 bytes little-endian, then its bytes) and the calibration inputs
(an .npz archive, "c{k}_{i}": input i of calibration call k), quantizes the model on them (NNCF's defaults:
activations and weights of the convolutions and matmuls to INT8, the rest float32, fast bias correction)
and writes the package at PATH. NNCF lives apart from autograph's environment, in the folder named by
AUTOGRAPH_NNCF_DIR (scripts/setup.sh installs it there), appended to this process's sys.path alone: its
dependency tabulate, importable in a process that imported torch, turns an unhandled Ctrl-C's exit into
status 1 instead of the signal's (torch's exit handler imports it), which autograph's own process keeps.
It imports nothing of autograph."""
import importlib.util
import io
import os
import struct
import sys
from typing import Dict, List

_LENGTH = struct.Struct("<Q")


def request(package: bytes, calibration: List[List["numpy.ndarray"]]) -> List[bytes]:  # noqa: F821
    """What this process reads on its stdin: the float32 package and the calibration inputs."""
    import numpy as np
    archive = io.BytesIO()
    np.savez(archive, **{f"c{k}_{i}": a for k, call in enumerate(calibration) for i, a in enumerate(call)})
    return [_LENGTH.pack(len(package)), package, archive.getvalue()]


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
    data = sys.stdin.buffer.read()
    if len(data) < _LENGTH.size:
        print("the package was not written", file=sys.stderr)
        return 1
    (size,) = _LENGTH.unpack_from(data)
    package, archive = data[_LENGTH.size:_LENGTH.size + size], data[_LENGTH.size + size:]
    if len(package) != size:
        print("the package was cut short", file=sys.stderr)
        return 1
    convert = _convert_module()
    xml, weights = convert.read_package(package)
    import nncf
    import openvino as ov
    model = ov.Core().read_model(model=xml, weights=ov.Tensor(weights))
    calls = _calls(archive)
    quantized = nncf.quantize(model, nncf.Dataset(calls), subset_size=len(calls))
    convert.save_package(quantized, path, inside=folder)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
