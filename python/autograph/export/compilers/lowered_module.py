"""A part's module made to compute its matmuls and convolutions in a precision below float32, as autocast
does: each such operator's float32 operands cast to the lower dtype (a weight read by such operators
alone stored in it), its result cast back to float32; everything else (normalizations, softmax,
residual sums, reductions) stays in float32, where rounding would add up. The part's inputs and outputs
keep their dtypes. A compiler then compiles it as any part (Inductor fuses the casts into the kernels
around them; its matmuls accumulate in float32); the contest keeps it only where the outputs meet option
tolerance."""
from typing import Dict, Set

import torch

DTYPES: Dict[str, torch.dtype] = {"bf16": torch.bfloat16, "fp16": torch.float16}

# The operators computed in the lower dtype (autocast's lower-precision list for matmuls and
# convolutions), by ATen name.
LOWERED_OPS: Set[str] = {"conv1d", "conv2d", "conv3d", "convolution", "conv_transpose1d", "conv_transpose2d",
                         "conv_transpose3d", "linear", "mm", "addmm", "bmm", "baddbmm", "addbmm", "matmul",
                         "scaled_dot_product_attention"}


def _is_float32(node: torch.fx.Node) -> bool:
    value = node.meta.get("val")
    return isinstance(value, torch.Tensor) and value.dtype == torch.float32


def _lowered(node: torch.fx.Node) -> bool:
    """Whether `node` is an operator of LOWERED_OPS returning one float32 tensor."""
    if node.op != "call_function" or not isinstance(node.target, torch._ops.OpOverload):
        return False
    return node.target._schema.name.split("::")[-1] in LOWERED_OPS and _is_float32(node)


def lowered_module(gm: torch.fx.GraphModule, precision: str) -> torch.fx.GraphModule:
    """`gm` (a part's module: weights as attributes, inputs as placeholders) computing its matmuls and
    convolutions in `precision` ("bf16", "fp16"), in place; returns it."""
    dtype = DTYPES[precision]
    graph = gm.graph
    lowered = [n for n in graph.nodes if _lowered(n)]
    # A float32 weight read by lowered operators alone is stored in the lower dtype (no cast per call).
    stored = {n for n in graph.nodes if n.op == "get_attr" and _is_float32(n) and n.users
              and all(u in lowered for u in n.users)}
    for node in stored:
        gm.register_buffer(node.target, getattr(gm, node.target).to(dtype))
    casts: Dict[torch.fx.Node, torch.fx.Node] = {}  # each float32 operand's cast, made once

    def cast(operand, user: torch.fx.Node):
        if not isinstance(operand, torch.fx.Node) or operand in stored or not _is_float32(operand):
            return operand
        if operand not in casts:  # before its first lowered reader (the operators go in order)
            with graph.inserting_before(user):
                casts[operand] = graph.call_function(torch.ops.aten._to_copy.default, (operand,), {"dtype": dtype})
        return casts[operand]

    for node in lowered:
        node.args = tuple(cast(a, node) for a in node.args)
        node.kwargs = {k: cast(v, node) for k, v in node.kwargs.items()}
        with graph.inserting_after(node):
            back = graph.call_function(torch.ops.aten._to_copy.default, (node,), {"dtype": torch.float32})
        node.replace_all_uses_with(back, delete_user_cb=lambda user: user is not back)
    graph.lint()
    gm.recompile()
    return gm


__all__ = ["DTYPES", "LOWERED_OPS", "lowered_module"]
