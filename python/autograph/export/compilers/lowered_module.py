"""A part's module made to compute in a precision below float32 (lowered weights): its float32 weights
stored in the lower dtype, its float32 inputs cast to it on entry, the float32 tensors its operators
create made in it, and its outputs cast back to float32, so that the program around the part keeps the
user's dtypes. A compiler then compiles it as any part (Inductor: its kernels accumulate in float32
where they reduce); the contest keeps it only where the outputs meet option tolerance."""
from typing import Dict

import torch

DTYPES: Dict[str, torch.dtype] = {"bf16": torch.bfloat16, "fp16": torch.float16}


def _is_float32(node: torch.fx.Node) -> bool:
    value = node.meta.get("val")
    return isinstance(value, torch.Tensor) and value.dtype == torch.float32


def lowered_module(gm: torch.fx.GraphModule, precision: str) -> torch.fx.GraphModule:
    """`gm` (a part's module: weights as attributes, inputs as placeholders) computing in `precision`
    ("bf16", "fp16"), in place; returns it."""
    dtype = DTYPES[precision]
    graph = gm.graph
    for name, buffer in list(gm.named_buffers(recurse=False)):
        if buffer.dtype == torch.float32:
            gm.register_buffer(name, buffer.to(dtype))
    nodes = list(graph.nodes)
    output = next(n for n in nodes if n.op == "output")
    entered = {}  # each float32 input's cast, to its input (an input returned as it is stays itself)
    for node in nodes:
        if node.op == "placeholder" and _is_float32(node):
            with graph.inserting_after(node):
                cast = graph.call_function(torch.ops.aten._to_copy.default, (node,), {"dtype": dtype})
            node.replace_all_uses_with(cast, delete_user_cb=lambda user: user is not cast)
            entered[cast] = node
        elif node.op == "call_function" and node.kwargs.get("dtype") == torch.float32:
            node.kwargs = dict(node.kwargs, dtype=dtype)  # a float32 tensor made inside: made lowered
    returned = []
    for value in output.args[0]:
        if value in entered:
            value = entered[value]
        elif isinstance(value, torch.fx.Node) and _is_float32(value):
            with graph.inserting_before(output):
                value = graph.call_function(torch.ops.aten._to_copy.default, (value,), {"dtype": torch.float32})
        returned.append(value)
    output.args = (tuple(returned),)
    graph.lint()
    gm.recompile()
    return gm


__all__ = ["DTYPES", "lowered_module"]
