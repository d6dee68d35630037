"""A part to an OpenVINO package. torch.onnx's exporter writes the part as ONNX in autograph's process
(onnx_of); OpenVINO's ONNX frontend reads it and the package is written (save_package), in autograph's
process or in a process of its own that runs this file with the arguments FOLDER PATH
(openvino._converter_command): it reads from its stdin the line "onnx N" and the model's N bytes, or
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


def onnx_of(part, examples) -> bytes:
    """The part (a graph module) as a serialized ONNX model, by torch.onnx's exporter; raises where it
    cannot export the part. Without the exporter's own optimizer: OpenVINO's frontend folds and fuses
    the same, and every zoo model ran as fast without it (outputs equal), while the export took less
    time."""
    import warnings
    import torch
    # The exporter's advice to call eval() first (an ATen graph has no modes), and a
    # deprecation inside torch that its copies of the module's tree specs meet (torch 2.11).
    with torch.no_grad(), warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Exporting a model while it is in training mode")
        warnings.filterwarnings("ignore", message=r"`isinstance\(treespec, LeafSpec\)` is deprecated",
                                category=FutureWarning)
        program = torch.onnx.export(part, tuple(examples), dynamo=True, external_data=False, verbose=False,
                                    optimize=False)
    return program.model_proto.SerializeToString()


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


def convert(part, examples):
    """The part as an OpenVINO model, in this process: through ONNX, else through the PyTorch frontend
    (whose error is then the one raised)."""
    try:
        return from_onnx(onnx_of(part, examples))
    except Exception:  # noqa: BLE001 - the other frontend may still take it
        return from_pytorch(part, examples)


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
