"""A part's module made to compute its matmuls and convolutions in a precision below float32, as autocast
does (lowered_graph.lower_operators): a weight that they alone read stored in the lower dtype as the
module's buffer. A compiler then compiles it as any part (Inductor fuses the casts into the kernels around
them; its matmuls accumulate in float32); the contest keeps it only where the outputs meet option
tolerance."""
from typing import Optional

import torch

from ..lowered_graph import DTYPES, lower_operators


def lowered_module(gm: torch.fx.GraphModule, precision: str) -> torch.fx.GraphModule:
    """`gm` (a part's module: weights as attributes, inputs as placeholders) computing its matmuls and
    convolutions in `precision` ("bf16", "fp16"), in place; returns it."""
    dtype = DTYPES[precision]

    def store(node: torch.fx.Node) -> Optional[torch.fx.Node]:
        if node.op != "get_attr":
            return None
        gm.register_buffer(node.target, getattr(gm, node.target).to(dtype))
        node.meta["val"] = node.meta["val"].to(dtype)
        return node

    lower_operators(gm.graph, precision, store)
    gm.graph.lint()
    gm.recompile()
    return gm


__all__ = ["lowered_module"]
