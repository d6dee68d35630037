"""The protocol every compiler of the export path's candidates follows (Compiler), typed on the parts
layer's types: a compiler is handed parts cut by the parts layer (parts.PartBuilder) and returns them
compiled (parts.CompiledPart), saying what it can lower and where; the contest does the rest."""
from typing import Any, Callable, Dict, List, Optional, Protocol, Sequence, Tuple

import torch

from ...settings import Settings
from ..parts import CompiledPart, NodeTimes, PartBuilder

# The candidates a compiler offers: each one's name and its parts (lists of AtenGraph node ids).
Offers = Dict[str, List[List[int]]]


class Compiler(Protocol):
    """A compiler of the export path's candidates. A new compiler is one module with one such object,
    listed in compilers/__init__.py: the contest (candidates.compiled_candidates) asks each compiler
    whose option is on which candidates it offers, starts them all, then waits for each."""

    name: str  # as messages name it
    option: str  # the Settings field that asks for its candidates
    label: str  # what the report's "chosen" calls its candidates ("openvino", "onnxruntime")
    # Whether its whole graph, lowered and beyond option tolerance, is lowered part by part (lowering.py),
    # and whether its parts mix with other compilers' (mixing.py): where a part costs little beside the
    # whole graph's compile.
    lowers_by_parts: bool
    mixes_parts: bool
    # Whether it compiles in a process of its own: its compiles start first, so that they run beside the
    # others' work in this one.
    compiles_apart: bool
    # The precisions it lowers to in a process of its own (int8's quantizations): where it compiles apart,
    # its whole graph's lowering to them starts before the search too, beside the compiles in this one.
    lowers_apart: Tuple[str, ...]
    # The precisions whose whole-graph package it can turn back to float32 operation by operation
    # (revert): its lowering by parts in them then builds on its whole graph, never cut (lowering.py).
    reverts: Tuple[str, ...]

    def missing(self) -> Optional[str]:
        """Why its candidates cannot be built and run in this process (its package is not installed),
        or None where they can."""

    def offers(self, builder: PartBuilder, graph: Dict[str, Any], body: Dict[str, Any], settings: Settings,
               plan_unverified: bool) -> Offers:
        """The candidates it offers for the plan `body` of `graph` on the builder's device: each
        candidate's name and its parts. `plan_unverified`: the plan is the analytical model's guess, to
        be verified later."""

    def lowered(self, device: torch.device, precision: str, candidate: str) -> List[str]:
        """The precisions below float32, down to `precision` (option precision), the parts of `candidate`
        (one of its offers) can compute in on `device`: the candidate competes once more in each."""

    def lowering(self) -> str:
        """What it lowers, to what, where: for the report's note where nothing was lowered."""

    def variants(self, builder: PartBuilder, parts: List[List[int]], precision: str) -> Tuple[str, ...]:
        """The ways it lowers `parts` to `precision`, each a candidate of its own timed beside the others
        where none is the faster on every model (NNCF's model types on a transformer's graph): ("",) where
        it has one; "" is always its first, the one lowered part by part where the whole graph misses."""

    def lower(self, builder: PartBuilder, name: str, parts: List[List[int]], labels: List[str],
              compiled: List[CompiledPart], precision: str, variant: str = "") -> Callable[[], List[CompiledPart]]:
        """Starts compiling candidate `name`'s `parts` (`compiled`: in float32) to compute in `precision`,
        the way `variant` (one of variants') says (work in a process of its own starts now, beside the
        others'); the returned call finishes it and
        returns each part: the same packages where the runner lowers them (the precision in the part),
        new ones where the package itself must (lowered weights, quantized models)."""

    def revert(self, builder: PartBuilder, part: Sequence[int], lowered: CompiledPart, float32: CompiledPart,
               in_float: Sequence[int]) -> CompiledPart:
        """`lowered` (`part` in a precision of `reverts`, made from `float32`, the part compiled in float32)
        with the operations of the graph nodes `in_float` computing in float32 again."""

    def start(self, builder: PartBuilder, name: str, parts: List[List[int]],
              labels: List[str]) -> Callable[[], List[CompiledPart]]:
        """Starts compiling candidate `name`'s `parts` (work that can run beside the others' starts
        now); the returned call finishes it and returns each part compiled."""

    def node_times(self, builder: PartBuilder, part: List[int], made: CompiledPart) -> NodeTimes:
        """Where one run of `part` compiled by it (`made`) spends its time, node by node, by its own
        profiler (parts.NodeTimes): what the mix of compilers is estimated from (mixing.py); parts.NOT_PROFILED
        where it has no profiler or cannot say."""

    def beside_search(self, builder: PartBuilder, graph: Dict[str, Any], settings: Settings) -> None:
        """Starts work on its whole-graph candidates that runs in this process beside the search, where the
        search times on a GPU (candidates.compiles_beside_search); the candidates wait for it."""

    def before_search(self, builder: PartBuilder, graph: Dict[str, Any], settings: Settings) -> Dict[str, Any]:
        """Its whole-graph candidates started before the search, where the search need not wait for them
        (candidates.compile_before_search): by name, a call that waits for the parts compiled, a
        candidate.JustInTime, or the exception that stopped one."""


def compiler_on(compiler: Compiler, settings: Settings) -> bool:
    """Whether the settings ask for `compiler`'s candidates."""
    return bool(getattr(settings, compiler.option))


__all__ = ["Compiler", "Offers", "compiler_on"]
