"""What a quantizing process reads on its stdin (openvino_quantize.py, onnxruntime_quantize.py): the float32
package and the settings (each a byte count, 8 bytes little-endian, then the bytes; the settings JSON),
then the inputs as an .npz archive ("c{k}_{i}": input i of call k), the judged ones first (the example's:
judged, not calibrated on; settings["judged"] says how many), then the calibration inputs. It imports
nothing of autograph: those processes, which have no autograph on their sys.path, run it by path."""
import io
import json
import struct
from typing import Any, Dict, List, Optional, Sequence, Tuple

_LENGTH = struct.Struct("<Q")
Calls = List[List["numpy.ndarray"]]  # noqa: F821 - each call's inputs in order


def request(package: bytes, calibration: Calls, settings: Dict[str, Any], judged: Sequence[List[Any]] = ()) -> List[bytes]:
    """The request's bytes, in chunks: `settings` gains "judged", how many of the inputs are `judged`."""
    import numpy as np
    archive = io.BytesIO()
    calls = list(judged) + list(calibration)
    np.savez(archive, **{f"c{k}_{i}": a for k, call in enumerate(calls) for i, a in enumerate(call)})
    text = json.dumps(dict(settings, judged=len(judged))).encode()
    return [_LENGTH.pack(len(package)), package, _LENGTH.pack(len(text)), text, archive.getvalue()]


def read(data: bytes) -> Optional[Tuple[bytes, Dict[str, Any], Calls, Calls]]:
    """(the package, the settings, every input call, the calibration calls alone) of a request's bytes, or
    None where they are cut short."""
    out, at = [], 0
    for _ in range(2):
        if len(data) < at + _LENGTH.size:
            return None
        (size,) = _LENGTH.unpack_from(data, at)
        at += _LENGTH.size
        if len(data) < at + size:
            return None
        out.append(data[at:at + size])
        at += size
    settings = json.loads(out[1])
    calls = _calls(data[at:])
    return out[0], settings, calls, calls[settings.get("judged", 0):]


def _calls(archive: bytes) -> Calls:
    import numpy as np
    with np.load(io.BytesIO(archive)) as loaded:
        named: Dict[str, "numpy.ndarray"] = {k: loaded[k] for k in loaded.files}  # noqa: F821
    calls: Dict[int, Dict[int, "numpy.ndarray"]] = {}  # noqa: F821
    for key, array in named.items():
        k, i = key[1:].split("_")
        calls.setdefault(int(k), {})[int(i)] = array
    return [[call[i] for i in sorted(call)] for _, call in sorted(calls.items())]


__all__ = ["Calls", "read", "request"]
