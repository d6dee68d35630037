"""Parts compiled by OpenVINO (export path, CPU): one more candidate compiler beside Inductor.

OpenVINO's CPU plugin runs some models well ahead of Inductor's C++ code (depthwise-separable and
NAS-style convolution networks: 2× on nasnet_a_mobile on the 2-core VM). A part — today the whole
graph — is exported to ONNX and read by OpenVINO (its PyTorch frontend where that export fails; see
_convert), serialized as IR (XML and float32 weights, never compressed to float16) and packed into
one uint8 tensor. In the
program it becomes one ``autograph::run_openvino_part`` call, which libautograph_openvino.so runs
with the latency hint and float32 inference precision. Like every candidate it is kept only where the
whole program measures faster. Packages are cached on disk beside Inductor's, keyed by the part's
graph, its weights and the OpenVINO and torch versions.
"""
import contextlib
import io
import os
import struct
import tempfile
from typing import Sequence

import torch

from ._library import openvino_missing
from .errors import Error
from .inductor_parts import _cache_key, cache_dir

PART_OP = "autograph::run_openvino_part"
FORMAT = "autograph-openvino-part"
_MAGIC = b"AGOV1\n"  # csrc/executor/openvino_part.h: kOpenVinoPackageMagic


def available() -> bool:
    """Whether OpenVINO parts can be built and run in this process (openvino_missing() says why not)."""
    return openvino_missing() is None


def pack(xml: bytes, weights: bytes) -> bytes:
    """The package run_openvino_part reads: magic, the XML's length (8 bytes, little-endian), XML, weights."""
    return _MAGIC + struct.pack("<Q", len(xml)) + xml + weights


def compile_package(gm: torch.fx.GraphModule, examples: Sequence[torch.Tensor], label: str = "part",
                    progress=None) -> bytes:
    """The part `gm` (an ATen graph module, its weights as attributes) as an OpenVINO package, from the
    disk cache when there."""
    why = openvino_missing()
    if why:
        raise Error(f"OpenVINO parts are not available: {why}")
    import openvino as ov
    key = _cache_key(gm, examples, torch.device("cpu"), {"compiler": "openvino", "via": "onnx", "version": ov.__version__})
    path = os.path.join(cache_dir(), key + ".ovpart")
    if not os.path.exists(path):
        if progress:
            progress(f"compiling {label} with OpenVINO")
        os.makedirs(cache_dir(), exist_ok=True)
        with tempfile.TemporaryDirectory(prefix="autograph-openvino-") as folder:
            model = _convert(gm, examples, folder)
            xml_path = os.path.join(folder, "part.xml")
            ov.save_model(model, xml_path, compress_to_fp16=False)  # float32 weights, as the program's
            with open(xml_path, "rb") as f:
                xml = f.read()
            with open(xml_path[:-4] + ".bin", "rb") as f:
                weights = f.read()
        partial = f"{path}.{os.getpid()}.partial"
        with open(partial, "wb") as f:
            f.write(pack(xml, weights))
        os.replace(partial, path)  # whole packages only, also with concurrent optimizers
    with open(path, "rb") as f:
        return f.read()


def _convert(gm: torch.fx.GraphModule, examples: Sequence[torch.Tensor], folder: str):
    """The part as an OpenVINO model: through ONNX (torch.onnx's exporter, then OpenVINO's ONNX
    frontend), else, where that export fails, through OpenVINO's PyTorch frontend. The ONNX route made
    models as fast or faster on every zoo model tried on the 2-core VM (median ms, ONNX / PyTorch frontend):
    nasnet_a_mobile 9.9 / 11.8, randwire 6.6 / 8.2, squeezenet 5.6 / 5.8, rnntc_sru 5.3 / 5.6,
    resnet50 28.1 / 28.2."""
    import openvino as ov
    onnx_path = os.path.join(folder, "part.onnx")
    try:
        with torch.no_grad(), contextlib.redirect_stdout(io.StringIO()):  # the exporter's progress lines
            torch.onnx.export(gm, tuple(examples), onnx_path, dynamo=True, external_data=False, verbose=False)
        return ov.convert_model(onnx_path)
    except Exception:  # noqa: BLE001 - the other frontend may still take it; its error is the one raised
        with torch.no_grad():
            return ov.convert_model(torch.export.export(gm, tuple(examples)))


__all__ = ["PART_OP", "FORMAT", "available", "pack", "compile_package"]
