"""Calls into the C++ planner (torch.ops.autograph.optimize_exported): an AtenGraph and its tensors in,
the program text and the report out."""
import json
from typing import Any, Dict, List, NamedTuple, Tuple

import torch

from ..errors import translate
from ..settings import Settings


class Program(NamedTuple):
    """A candidate that is a program: its text, the weights it is passed before the user's tensors, its
    planner's report and how many compiled parts it calls (0: ATen's kernels alone)."""
    text: str
    weights: List[torch.Tensor]
    report: Dict[str, Any]
    parts: int


def plan(graph: Dict[str, Any], tensors: List[torch.Tensor], settings: Settings) -> Tuple[str, Dict[str, Any]]:
    """The program text of `graph` planned with `settings` on `tensors` (its weights, then the user's),
    and the plan's report."""
    try:
        program, report = torch.ops.autograph.optimize_exported(json.dumps(graph), tensors,
                                                                json.dumps(settings.declared()))
    except (RuntimeError, ValueError) as e:
        raise translate(e) from None
    return program, json.loads(report)


def resolved(options: Dict[str, Any], method: str, device: torch.device) -> Settings:
    """The settings of one optimize, resolved once before any work into one typed, frozen object (Settings,
    which mirrors the C++ option table: its defaults are the table's): `options` as given, the method and
    the device. Every later step reads them from there; none is read back from the planner."""
    return Settings.of(**dict(options, method=method, device=str(device)))


def replaced(settings: Settings, **changes: Any) -> Settings:
    """`settings` with `changes` (a step planned otherwise: method sequential, no CUDA Graph)."""
    return Settings.of(settings, **changes)


__all__ = ["Program", "plan", "replaced", "resolved"]
