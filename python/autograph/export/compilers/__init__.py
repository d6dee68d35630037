"""The compilers of the export path's candidates, each behind the same protocol (base.Compiler), each
compiling the parts the parts layer (export/parts/) cuts: Inductor (AOTInductor packages, inductor.py),
OpenVINO (openvino.py) and ONNX Runtime (onnxruntime.py). A fourth compiler is one more module with its
COMPILER, listed here. Nothing outside this package imports a particular compiler: it reads COMPILERS,
and what only one compiler can do today through the names below."""
from . import inductor, onnxruntime, openvino
from .base import Compiler, compiler_on

# The compilers whose compiles run in a process of their own come first where order matters (started
# before the others' work in this process).
COMPILERS = (inductor.COMPILER, openvino.COMPILER, onnxruntime.COMPILER)


def just_in_time_packager() -> Compiler:
    """The compiler that compiles a candidate just in time (candidate.JustInTime) and packages it when it
    is kept: Inductor."""
    return inductor.COMPILER


# A whole program for every shape in its range: Inductor's package of it, how it loads, and the graph that
# runs it (export/shapes.py).
compile_for_every_shape = inductor.compile_for_every_shape
load_every_shape = inductor.load_every_shape
package_graph = inductor.package_graph

__all__ = ["COMPILERS", "Compiler", "compile_for_every_shape", "compiler_on", "just_in_time_packager",
           "load_every_shape", "package_graph"]
