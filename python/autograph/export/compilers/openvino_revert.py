"""A quantized OpenVINO package with some of its operations computing in float32 again: the package of the
whole graph NNCF quantized, and its float32 package, make a whole graph whose parts are each int8 or float32
(lowering.py, where a compiler reverts) without cutting the graph or quantizing a part on its own.

An operation to revert reads its inputs as the float32 model does: where the quantized model feeds it
through a FakeQuantize (its activations) or SmoothQuant's scale, what that reads instead; where the
float32 model's operation of the same name reads a constant (its weights, as NNCF compressed them to INT8
behind a decompression; its bias, as NNCF's bias correction changed it), that constant. Operations NNCF made,
or that the float32 model lacks, are left as they are: the program is judged as a whole."""
import os
import tempfile
from typing import Callable

from . import openvino_convert


def _made_by_nncf(node) -> bool:
    """Whether `node` is NNCF's on an activation's way: a FakeQuantize, or SmoothQuant's scale of a
    transformer's activations (whose weights it scaled the other way: the float32 model's are read instead)."""
    return node.get_type_name() == "FakeQuantize" or "nncf_smooth_quant" in node.get_friendly_name()


def reverted(lowered: bytes, float32: bytes, in_float: Callable[[str], bool]) -> bytes:
    """The package `lowered` (the float32 package `float32` quantized by NNCF) with each operation whose
    friendly name `in_float` says computing in float32 again (module docstring)."""
    import openvino as ov
    core = ov.Core()
    quantized, original = (core.read_model(model=xml, weights=ov.Tensor(weights)) for xml, weights in
                           (openvino_convert.read_package(p) for p in (lowered, float32)))
    by_name = {op.get_friendly_name(): op for op in original.get_ops()}
    for op in quantized.get_ops():
        if op.get_type_name() in ("Constant", "Parameter", "Result") or _made_by_nncf(op) \
                or not in_float(op.get_friendly_name()):
            continue
        twin = by_name.get(op.get_friendly_name())
        for k, port in enumerate(op.inputs()):
            source, moved = port.get_source_output(), False
            while _made_by_nncf(source.get_node()):
                source, moved = source.get_node().input_value(0), True
            if moved:
                port.replace_source_output(source)
                continue
            if twin is None or twin.get_input_size() != op.get_input_size():
                continue
            wanted = twin.input_value(k)
            constant = wanted.get_node()
            if constant.get_type_name() == "Constant" and wanted.get_partial_shape() == port.get_partial_shape():
                port.replace_source_output(ov.op.Constant(constant.get_tensor_view()).output(0))
    quantized.validate_nodes_and_infer_types()
    with tempfile.TemporaryDirectory(prefix="autograph-openvino-revert-") as folder:
        path = os.path.join(folder, "part.ovpart")
        openvino_convert.save_package(quantized, path, inside=folder)
        with open(path, "rb") as f:
            return f.read()


__all__ = ["reverted"]
