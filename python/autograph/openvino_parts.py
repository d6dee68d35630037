"""Parts compiled by OpenVINO (export path, CPU): one more candidate compiler beside Inductor.

OpenVINO's CPU plugin runs some models well ahead of Inductor's C++ code (depthwise-separable and
NAS-style convolution networks: 2× on nasnet_a_mobile on the 2-core VM). A part — today the whole
graph — is converted from its exported ATen graph by OpenVINO's PyTorch frontend, serialized as IR
(XML and float32 weights, never compressed to float16) and packed into one uint8 tensor. In the
program it becomes one ``autograph::run_openvino_part`` call, which libautograph_openvino.so runs
with the latency hint and float32 inference precision. Like every candidate it is kept only where the
whole program measures faster. Packages are cached on disk beside Inductor's, keyed by the part's
graph, its weights and the OpenVINO and torch versions.
"""
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
    key = _cache_key(gm, examples, torch.device("cpu"), {"compiler": "openvino", "version": ov.__version__})
    path = os.path.join(cache_dir(), key + ".ovpart")
    if not os.path.exists(path):
        if progress:
            progress(f"compiling {label} with OpenVINO")
        os.makedirs(cache_dir(), exist_ok=True)
        with torch.no_grad():
            ep = torch.export.export(gm, tuple(examples))
            model = ov.convert_model(ep)
        with tempfile.TemporaryDirectory(prefix="autograph-openvino-") as folder:
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


__all__ = ["PART_OP", "FORMAT", "available", "pack", "compile_package"]
