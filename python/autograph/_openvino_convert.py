"""A part to an OpenVINO package: in autograph's process (convert, save_package), or as a script in a
process of its own (`python _openvino_convert.py FOLDER PATH`: once GO is on its stdin, FOLDER/part.pt,
the part's pickled graph module, and FOLDER/examples.pt in; the package at PATH).
It imports nothing of autograph, whose import loads its libraries."""
import contextlib
import importlib
import io
import os
import shutil
import struct
import sys
import tempfile
from typing import Sequence

import torch

MAGIC = b"AGOV1\n"  # csrc/executor/openvino_part.h: kOpenVinoPackageMagic
GO = b"go\n"  # on the script's stdin once its FOLDER is written


def convert(part, examples: Sequence[torch.Tensor]):
    """The part (a graph module or its ExportedProgram) as an OpenVINO model: through ONNX (torch.onnx's
    exporter, then OpenVINO's ONNX frontend), else, where that export fails, through OpenVINO's PyTorch
    frontend. The ONNX route made models as fast or faster on every zoo model tried on the 2-core VM
    (median ms, ONNX / PyTorch frontend): nasnet_a_mobile 9.9 / 11.8 (5.6-6.7 / 7.7-7.9 with OpenVINO
    2026.4), randwire 6.6 / 8.2 (4.1-4.4 / 5.4), squeezenet 5.6 / 5.8, rnntc_sru 5.3 / 5.6, resnet50
    28.1 / 28.2. The ONNX model stays in memory: writing bert_base's 436 MB file and reading it back
    took 2 s of its 10 s."""
    import openvino as ov
    try:
        with torch.no_grad(), contextlib.redirect_stdout(io.StringIO()):  # the exporter's progress lines
            program = torch.onnx.export(part, tuple(examples), dynamo=True, external_data=False, verbose=False)
        return ov.convert_model(io.BytesIO(program.model_proto.SerializeToString()))
    except Exception:  # noqa: BLE001 - the other frontend may still take it; its error is the one raised
        with torch.no_grad():
            program = part if isinstance(part, torch.export.ExportedProgram) else \
                torch.export.export(part, tuple(examples))
            return ov.convert_model(program)


def save_package(model, path: str) -> None:
    """`model` as the package run_openvino_part reads, at `path`, atomically: MAGIC, the IR's XML length
    (8 bytes, little-endian), its XML, then its weights (float32, as the program's: never compressed to
    float16)."""
    import openvino as ov
    with tempfile.TemporaryDirectory(prefix="autograph-openvino-") as folder:
        xml_path = os.path.join(folder, "part.xml")
        ov.save_model(model, xml_path, compress_to_fp16=False)
        with open(xml_path, "rb") as f:
            xml = f.read()
        partial = f"{path}.{os.getpid()}.partial"
        with open(partial, "wb") as out, open(xml_path[:-4] + ".bin", "rb") as weights:
            out.write(MAGIC + struct.pack("<Q", len(xml)) + xml)
            shutil.copyfileobj(weights, out, 16 << 20)
    os.replace(partial, path)  # whole packages only, also with concurrent optimizers


def main(folder: str, path: str) -> int:
    import warnings
    warnings.simplefilter("ignore")  # the exporter's; what fails is the exit status and stderr's last line
    for module in ("openvino", "onnxscript"):  # imported while autograph writes the part
        with contextlib.suppress(ImportError):
            importlib.import_module(module)
    if sys.stdin.buffer.readline() != GO:
        print("the part was not written", file=sys.stderr)
        return 1
    # autograph's own files, written for this process a moment ago: not weights_only.
    part = torch.load(os.path.join(folder, "part.pt"), weights_only=False)
    examples = torch.load(os.path.join(folder, "examples.pt"))
    save_package(convert(part, examples), path)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
