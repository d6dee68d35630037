"""What the compilers of the export path share: the protocol each one follows (Compiler), the whole
graph as a part, and the digest of a part's content, which their disk cache keys are made from."""
import hashlib
import json
import weakref
from typing import Any, Callable, Dict, List, Optional, Protocol, Sequence, Tuple

import torch

# A compiled part: its package's bytes and its input / output value ids in the graph.
CompiledPart = Tuple[bytes, List[int], List[int]]


class Compiler(Protocol):
    """A compiler of the export path's candidates. A new compiler is one module with one such object,
    listed in compilers/__init__.py: the contest (candidates.compiled_candidates) asks each compiler
    whose option is on which candidates it offers, starts them all, then waits for each."""

    name: str  # as messages name it
    option: str  # the option (a key of the resolved settings) that asks for its candidates
    part_call: Dict[str, str]  # how a program calls one of its parts: rewrite_with_parts' `op` and `fmt`
    # Whether its whole graph, lowered and beyond option tolerance, is lowered part by part (lowering.py):
    # where a part lowered costs little beside its float32 compile.
    lowers_by_parts: bool

    def missing(self) -> Optional[str]:
        """Why its candidates cannot be built and run in this process (its package is not installed),
        or None where they can."""

    def offers(self, builder: Any, graph: Dict[str, Any], body: Dict[str, Any], settings: Dict[str, Any],
               plan_unverified: bool) -> Dict[str, List[List[int]]]:
        """The candidates it offers for the plan `body` of `graph` on the builder's device: each
        candidate's name and its parts (lists of node ids). `plan_unverified`: the plan is the
        analytical model's guess, to be verified later."""

    def lowered(self, device: torch.device, precision: str, candidate: str) -> List[str]:
        """The precisions below float32, down to `precision` (option precision), the parts of `candidate`
        (one of its offers) can compute in on `device`: the candidate competes once more in each (lower
        makes its parts; the precision goes in their specs too)."""

    def lower(self, builder: Any, name: str, parts: List[List[int]], labels: List[str],
              compiled: List[CompiledPart], precision: str) -> List[CompiledPart]:
        """Candidate `name`'s `parts` (`compiled`: in float32) compiled to compute in `precision`: the same
        packages where the runner lowers them (the spec's precision), new ones where the package itself
        must (lowered weights)."""

    def start(self, builder: Any, name: str, parts: List[List[int]],
              labels: List[str]) -> Callable[[], List[CompiledPart]]:
        """Starts compiling candidate `name`'s `parts` (work that can run beside the others' starts
        now); the returned call finishes it and returns each part compiled."""


def whole_graph_part(body: Dict[str, Any]) -> List[List[int]]:
    """The plan `body`'s graph as one part, its nodes in the plan's order."""
    return [[n for stage in body["schedule"]["stages"] for group in stage["groups"]
             for op in group for n in body["operators"][op]["nodes"]]]


def every_node(graph: Dict[str, Any]) -> List[int]:
    """The whole graph as one part, known before any plan."""
    return list(range(len(graph["nodes"])))


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


__all__ = ["CompiledPart", "Compiler", "every_node", "part_digest", "whole_graph_part"]
