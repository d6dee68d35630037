"""The optimized program's small weights packed into one tensor per dtype and device (csrc/executor/
packed_weights.h): each call of an exported program hands every weight over on its own (its graph reads
each as an attribute, the operator call boxes each), a host cost per weight and call that a model of
hundreds of small weights pays on every run. Packed, a call passes a few tensors; the program makes its
views of them once.

What is packed: weights of at most PACKED_MAX_BYTES, dense (their strides a permutation of contiguous
ones), of a dtype and device that at least one other such weight shares. Larger weights (their copy
would cost memory beside the caller's, and their number is small) and compiled parts' packages (uint8
bytes) pass as before. A weight held at several positions is copied once."""
import json
from typing import Dict, List, Sequence, Tuple

import torch
from torch._prims_common import is_non_overlapping_and_dense_or_false

from .._library import load_library
from .program_format import DTYPE_NAMES, header_of

# The largest weight copied into a packed tensor: the copies cost memory beside the caller's own
# weights, and weights this large are few in any model, so their hand-over costs little.
PACKED_MAX_BYTES = 1 << 20
# Each packed weight starts at a multiple of this many bytes (what vectorized kernels load best).
PACKED_ALIGN_BYTES = 64


def _packable(t: torch.Tensor) -> bool:
    # Not uint8: compiled parts' packages are bytes their runners load from a tensor of their own.
    return (t.layout == torch.strided and t.dtype in DTYPE_NAMES and t.dtype != torch.uint8 and 0 < t.numel()
            and t.numel() * t.element_size() <= PACKED_MAX_BYTES and is_non_overlapping_and_dense_or_false(t)
            and not t.requires_grad)


def packed(program: str, weights: Sequence[torch.Tensor]) -> Tuple[str, List[torch.Tensor]]:
    """`program` (taking `weights` first among its inputs) and the tensors its calls pass in their place:
    with its small weights packed where that passes fewer tensors, else the two unchanged. A program with
    dynamic shapes is left as it is (its fake kernel feeds the graph for other shapes by position)."""
    if header_of(program).get("dynamic"):
        return program, list(weights)
    groups: Dict[Tuple[torch.dtype, torch.device], List[int]] = {}
    for i, w in enumerate(weights):
        if _packable(w):
            groups.setdefault((w.dtype, w.device), []).append(i)
    groups = {k: v for k, v in groups.items() if len(v) >= 2}
    if not groups:
        return program, list(weights)
    entries, buffers = [], []
    for (dtype, device), positions in groups.items():
        align = max(1, PACKED_ALIGN_BYTES // weights[positions[0]].element_size())
        placed: Dict[Tuple[int, Tuple[int, ...], Tuple[int, ...]], int] = {}
        members, size = [], 0
        for i in positions:
            w = weights[i]
            key = (w.data_ptr(), tuple(w.shape), tuple(w.stride()))
            if key not in placed:
                placed[key] = size
                size += -(-w.numel() // align) * align
            members.append((i, placed[key], list(w.shape), list(w.stride())))
        buffer = torch.empty(size, dtype=dtype, device=device)
        for i, offset, shape, stride in members:
            torch.as_strided(buffer, shape, stride, offset).copy_(weights[i])
        entries.append({"dtype": DTYPE_NAMES[dtype], "members": members})
        buffers.append(buffer)
    load_library()
    text = torch.ops.autograph.with_packed_weights(program, json.dumps({"groups": entries}, separators=(",", ":")))
    taken = {i for positions in groups.values() for i in positions}
    return text, buffers + [w for i, w in enumerate(weights) if i not in taken]


__all__ = ["PACKED_ALIGN_BYTES", "PACKED_MAX_BYTES", "packed"]
