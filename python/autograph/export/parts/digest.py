"""The digest of a part's content (its code, its inputs' metadata, its weights' bytes) and of what it is
compiled with: what every compiler's disk cache keys are made from (cache.key)."""
import hashlib
import json
import weakref
from typing import Any, Dict, Optional, Sequence

import torch


def part_digest(gm: torch.fx.GraphModule, examples: Sequence[torch.Tensor], device: torch.device,
                configs: Dict[str, Any], digests: Optional[Dict[Any, Any]] = None) -> str:
    """The digest of what the part `gm` (its code, its inputs' metadata, its weights' bytes) compiled with
    `configs` is made from: the content of its cache key (cache.key). `digests` remembers each weight's
    digest for the next key of the same optimize, whose weights all stay alive (hashing them again for
    each key is noticeable on a model as large as bert_base)."""
    h = hashlib.sha256()
    # "aot_compile": packages made from the graph module as it is (compile_graph_module), not exported first
    h.update(f"aot_compile|{torch.__version__}|{device}|{json.dumps(configs, sort_keys=True)}|".encode())
    h.update(gm.code.encode())
    for t in examples:
        h.update(f"{tuple(t.shape)}{t.stride()}{t.dtype}".encode())
    digests = {} if digests is None else digests
    for name, b in sorted(gm.named_buffers()):
        h.update(f"{name}{tuple(b.shape)}{b.stride()}{b.dtype}".encode())
        seen = (b.untyped_storage().data_ptr(), b.storage_offset(), tuple(b.shape), b.stride(), b.dtype, b.device)
        remembered = digests.get(seen)
        # Only while the tensor it was read from lives: a copy made for one module (weights moved to the
        # device) may be freed, and another tensor then sit at the same address.
        if remembered is None or remembered[0]() is None:
            # The tensor's own bytes, read in place (tobytes() copied all of a model's weights once more per key).
            remembered = (weakref.ref(b), hashlib.sha256(
                b.detach().cpu().contiguous().reshape(-1).view(torch.uint8).numpy() if b.numel() else b"").digest())
            digests[seen] = remembered
        h.update(remembered[1])
    return h.hexdigest()[:32]


__all__ = ["part_digest"]
