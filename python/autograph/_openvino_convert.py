"""A part to OpenVINO's IR: in autograph's process (convert), or as a script in a process of its own
(`python _openvino_convert.py FOLDER`: FOLDER/part.pt, the part's pickled graph module, and
examples.pt in; part.xml and part.bin out).
It imports nothing of autograph, whose import loads its libraries."""
import contextlib
import io
import os
import sys
from typing import Sequence

import torch


def convert(part, examples: Sequence[torch.Tensor], folder: str):
    """The part (a graph module or its ExportedProgram) as an OpenVINO model: through ONNX (torch.onnx's
    exporter, then OpenVINO's ONNX frontend), else, where that export fails, through OpenVINO's PyTorch
    frontend. The ONNX route made models as fast or faster on every zoo model tried on the 2-core VM
    (median ms, ONNX / PyTorch frontend): nasnet_a_mobile 9.9 / 11.8, randwire 6.6 / 8.2, squeezenet
    5.6 / 5.8, rnntc_sru 5.3 / 5.6, resnet50 28.1 / 28.2."""
    import openvino as ov
    onnx_path = os.path.join(folder, "part.onnx")
    try:
        with torch.no_grad(), contextlib.redirect_stdout(io.StringIO()):  # the exporter's progress lines
            torch.onnx.export(part, tuple(examples), onnx_path, dynamo=True, external_data=False, verbose=False)
        return ov.convert_model(onnx_path)
    except Exception:  # noqa: BLE001 - the other frontend may still take it; its error is the one raised
        with torch.no_grad():
            program = part if isinstance(part, torch.export.ExportedProgram) else \
                torch.export.export(part, tuple(examples))
            return ov.convert_model(program)


def save(model, folder: str) -> None:
    import openvino as ov
    ov.save_model(model, os.path.join(folder, "part.xml"), compress_to_fp16=False)  # float32, as the program's


def main(folder: str) -> int:
    import warnings
    warnings.simplefilter("ignore")  # the exporter's; what fails is the exit status and stderr's last line
    # autograph's own files, written for this process a moment ago: not weights_only.
    part = torch.load(os.path.join(folder, "part.pt"), weights_only=False)
    examples = torch.load(os.path.join(folder, "examples.pt"))
    save(convert(part, examples, folder), folder)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
