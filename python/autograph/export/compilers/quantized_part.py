"""A part's float32 package quantized to INT8 by a quantizing process (OpenVINO's by NNCF,
openvino_quantize.py; ONNX Runtime's by its static quantization, onnxruntime_quantize.py): the part's
inputs at each calibration input sent to it (quantize_request.py), the package cached on disk like any
other, keyed by the float32 package, the inputs, the quantizer's configuration and the request's settings."""
import hashlib
from typing import Any, Dict, List, Sequence

import torch

from ..._library import library_path
from ...errors import Error
from .. import cache as part_cache
from ..parts import CompiledPart, PartBuilder
from . import converter_process
from . import quantize_request
from .converter_process import Converter


def quantized_package(quantizer: Converter, kind: str, builder: PartBuilder, made: CompiledPart, label: str,
                      configs: Dict[str, Any], settings: Dict[str, Any],
                      judged: Sequence[Sequence[torch.Tensor]] = ()) -> bytes:
    """`made`'s package quantized by `quantizer` on the part's inputs at each calibration input
    (PartBuilder.calibration_examples), in its process; from the disk cache (entries of `kind`) when there.
    `settings` go to the process (with the path of autograph's library, which computes the built-in
    measures); `judged`: more of the part's input calls, judged there and not calibrated on."""
    calls = _arrays(builder.calibration_examples(made.input_ids))
    if not calls:
        raise Error("int8 parts are quantized on the calibration inputs, and there are none")
    shown = _arrays(judged)
    content = hashlib.sha256(part_cache.sha256_of(made.package).encode())
    for call in shown + calls:
        for a in call:
            content.update(f"{a.shape}{a.dtype}".encode())
            content.update(a.tobytes())
    entry = part_cache.key(kind, torch.device("cpu"), dict(configs, settings=settings), content.hexdigest()[:32])
    package = part_cache.read(entry, quantizer.suffix)
    if package is None:
        builder.progress(f"quantizing {label} to int8 with {quantizer.name}")
        pending = converter_process.start_process(quantizer, entry)
        builder.keep_until_close(pending)
        if pending._process is None:  # the quantizers run in a process of their own only
            pending.close()
            raise Error(f"{quantizer.name}'s process did not start; int8 parts are quantized in a process of their own only")
        pending.send(*quantize_request.request(made.package, calls, dict(settings, library=library_path()), shown))
        package = pending.result()
    return package


def _arrays(calls: Sequence[Sequence[torch.Tensor]]) -> List[List[Any]]:
    return [[t.detach().cpu().contiguous().numpy() for t in call] for call in calls]


__all__ = ["quantized_package"]
