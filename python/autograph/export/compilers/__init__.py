"""The compilers of the export path's candidates, each behind the same protocol (base.Compiler):
Inductor (AOTInductor packages, inductor.py) and OpenVINO (openvino.py). A third compiler is one more
module with its COMPILER, listed here."""
from . import inductor, openvino

COMPILERS = (inductor.COMPILER, openvino.COMPILER)

__all__ = ["COMPILERS"]
