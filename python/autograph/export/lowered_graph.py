"""An FX graph's matmuls and convolutions computed in a precision below float32, as autocast computes
them: each such operator's float32 operands cast to the lower dtype (a weight read by such operators
alone stored in it once), its result cast back to float32; everything else (normalizations, softmax,
residual sums, reductions) stays in float32, where rounding would add up. The graph's inputs and
outputs keep their dtypes. Used on a compiled part's module (compilers/lowered_module.py) and on the
program a plan on ATen's kernels is made from (rewrites.lower_precision)."""
from typing import Callable, Dict, Optional, Set

import torch

DTYPES: Dict[str, torch.dtype] = {"bf16": torch.bfloat16, "fp16": torch.float16}

# The operators computed in the lower dtype (autocast's lower-precision list for matmuls and
# convolutions), by ATen name.
LOWERED_OPS: Set[str] = {"conv1d", "conv2d", "conv3d", "convolution", "conv_transpose1d", "conv_transpose2d",
                         "conv_transpose3d", "linear", "mm", "addmm", "bmm", "baddbmm", "addbmm", "matmul",
                         "scaled_dot_product_attention"}


def is_float32(node: torch.fx.Node) -> bool:
    value = node.meta.get("val")
    return isinstance(value, torch.Tensor) and value.dtype == torch.float32


def _lowered(node: torch.fx.Node) -> bool:
    """Whether `node` is an operator of LOWERED_OPS returning one float32 tensor."""
    if node.op != "call_function" or not isinstance(node.target, torch._ops.OpOverload):
        return False
    return node.target._schema.name.split("::")[-1] in LOWERED_OPS and is_float32(node)


def _cast(graph: torch.fx.Graph, node: torch.fx.Node, dtype: torch.dtype) -> torch.fx.Node:
    """`node` cast to `dtype` (at the graph's insertion point), its metadata value too."""
    cast = graph.call_function(torch.ops.aten._to_copy.default, (node,), {"dtype": dtype})
    cast.meta["val"] = node.meta["val"].to(dtype)
    return cast


def lower_operators(graph: torch.fx.Graph, precision: str,
                    store: Callable[[torch.fx.Node], Optional[torch.fx.Node]]) -> int:
    """In place: each operator of LOWERED_OPS returning one float32 tensor computes in `precision` ("bf16",
    "fp16"). Its float32 operands are cast once each, before their first lowered reader, except a float32
    value that lowered operators alone read, which `store` may give in the lower dtype (a node reading it
    stored so, made once: a weight; None where it is none, and it is cast as any operand). Its result is
    cast back to float32 for its readers. Nodes made or changed carry their value's metadata ("val") in
    their new dtype. Returns how many operators were lowered."""
    dtype = DTYPES[precision]
    lowered = [n for n in graph.nodes if _lowered(n)]
    readers = set(lowered)
    stored: Dict[torch.fx.Node, torch.fx.Node] = {}
    for node in list(graph.nodes):
        if is_float32(node) and node.users and all(u in readers for u in node.users):
            made = store(node)
            if made is not None:
                stored[node] = made
    casts: Dict[torch.fx.Node, torch.fx.Node] = {}

    def cast(operand, user: torch.fx.Node):
        if isinstance(operand, torch.fx.Node) and operand in stored:
            return stored[operand]
        if not isinstance(operand, torch.fx.Node) or not is_float32(operand):
            return operand
        if operand not in casts:  # before its first lowered reader (the operators go in order)
            with graph.inserting_before(user):
                casts[operand] = _cast(graph, operand, dtype)
        return casts[operand]

    for node in lowered:
        node.args = tuple(cast(a, node) for a in node.args)
        node.kwargs = {k: cast(v, node) for k, v in node.kwargs.items()}
        node.meta["val"] = node.meta["val"].to(dtype)
        with graph.inserting_after(node):
            back = _cast(graph, node, torch.float32)
        node.replace_all_uses_with(back, delete_user_cb=lambda user: user is not back)
    return len(lowered)


__all__ = ["DTYPES", "LOWERED_OPS", "is_float32", "lower_operators"]
