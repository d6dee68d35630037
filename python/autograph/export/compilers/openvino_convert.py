"""A part to an OpenVINO package. torch.onnx's exporter writes the part as ONNX in autograph's process
(onnx_export.onnx_of); OpenVINO's ONNX frontend reads it and the package is written (save_package), in
autograph's process or in a process of its own that runs this file with the arguments FOLDER PATH
(converter_process.converter_command): it reads from its stdin the line "onnx N" and the model's N bytes, or
where that export failed the line "pytorch" (then FOLDER/part.pt, the part's pickled graph module, for
OpenVINO's PyTorch frontend, and FOLDER/examples.pt), and writes the package at PATH.
It imports nothing of autograph, whose import loads its libraries, and torch only for the PyTorch
frontend."""
import contextlib
import importlib
import io
import os
import shutil
import struct
import sys
import tempfile
from typing import Optional

MAGIC = b"AGOV1\n"  # csrc/executor/openvino_part.h: kOpenVinoPackageMagic
PYTORCH = b"pytorch\n"  # on the script's stdin once FOLDER/part.pt and FOLDER/examples.pt are written


def onnx_header(size: int) -> bytes:
    """The script's first line on stdin where the ONNX model's `size` bytes follow."""
    return b"onnx %d\n" % size


def from_onnx(model):
    """The OpenVINO model of an ONNX model: its serialized bytes, or the path of its file."""
    import openvino as ov
    return ov.convert_model(io.BytesIO(model) if isinstance(model, bytes) else model)


def from_pytorch(part, examples):
    """The OpenVINO model of the part (a graph module or its ExportedProgram) by OpenVINO's PyTorch
    frontend, for parts torch.onnx cannot export. ONNX is the first choice: its models ran as fast or
    faster on every zoo model tried."""
    import openvino as ov
    import torch
    with torch.no_grad():
        program = part if isinstance(part, torch.export.ExportedProgram) else \
            torch.export.export(part, tuple(examples))
        return ov.convert_model(program)


def save_package(model, path: str, inside: Optional[str] = None) -> None:
    """`model` as the package run_openvino_part reads, at `path`, atomically: MAGIC, the IR's XML length
    (8 bytes, little-endian), its XML, then its weights (float32, as the program's: never compressed to
    float16). The IR is written first in a folder made `inside` the given one (the conversion's own,
    which its owner removes even when this process is killed while saving), else in TMPDIR."""
    import openvino as ov
    with tempfile.TemporaryDirectory(prefix="autograph-openvino-save-", dir=inside) as folder:
        xml_path = os.path.join(folder, "part.xml")
        ov.save_model(model, xml_path, compress_to_fp16=False)
        with open(xml_path, "rb") as f:
            xml = f.read()
        partial = f"{path}.{os.getpid()}.partial"
        with open(partial, "wb") as out, open(xml_path[:-4] + ".bin", "rb") as weights:
            out.write(MAGIC + struct.pack("<Q", len(xml)) + xml)
            shutil.copyfileobj(weights, out, 16 << 20)
    os.replace(partial, path)  # whole packages only, also with concurrent optimizers


def read_package(package: bytes):
    """The IR of a package save_package wrote: (its XML text, its weights as a uint8 array over the
    package's bytes, no copy). ValueError where the package is cut short or not one."""
    import numpy as np
    header = len(MAGIC) + 8
    if not package.startswith(MAGIC) or len(package) < header:
        raise ValueError("not an autograph OpenVINO package")
    (xml_size,) = struct.unpack("<Q", package[len(MAGIC):header])
    if len(package) < header + xml_size:
        raise ValueError("the OpenVINO package is cut short")
    return package[header:header + xml_size].decode(), np.frombuffer(package, dtype=np.uint8, offset=header + xml_size)


def main(folder: str, path: str) -> int:
    import warnings
    warnings.simplefilter("ignore")  # the frontends'; what fails is the exit status and stderr's last line
    with contextlib.suppress(ImportError):  # imported while autograph exports the part
        importlib.import_module("openvino")
    line = sys.stdin.buffer.readline()
    if line.startswith(b"onnx "):
        size = int(line.split()[1])
        data = sys.stdin.buffer.read(size)
        if len(data) != size:
            print("the ONNX model was cut short", file=sys.stderr)
            return 1
        model = from_onnx(data)
        del data
    elif line == PYTORCH:
        import torch
        # autograph's own files, written for this process a moment ago: not weights_only.
        part = torch.load(os.path.join(folder, "part.pt"), weights_only=False)
        model = from_pytorch(part, torch.load(os.path.join(folder, "examples.pt")))
    else:
        print("the part was not written", file=sys.stderr)
        return 1
    save_package(model, path, inside=folder)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
