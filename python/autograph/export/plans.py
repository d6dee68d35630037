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


def plan(graph: Dict[str, Any], tensors: List[torch.Tensor], settings: Dict[str, Any]) -> Tuple[str, Dict[str, Any]]:
    """The program text of `graph` planned with `settings` on `tensors` (its weights, then the user's),
    and the plan's report (the plan alone: the options of RESOLVED come from resolved, never from the
    planner)."""
    try:
        program, report = torch.ops.autograph.optimize_exported(json.dumps(graph), tensors, json.dumps(settings))
    except (RuntimeError, ValueError) as e:
        raise translate(e) from None
    return program, json.loads(report)


# The options the export path reads itself, resolved once (resolved) to their values, and their types.
RESOLVED = {"inductor": bool, "openvino": bool, "check_rewrites": bool, "precision": str, "tolerance": float}


def resolved(options: Dict[str, Any], method: str, device: torch.device) -> Dict[str, Any]:
    """The settings of one optimize, resolved once before any work: `options` as given, the method and
    device, and each of RESOLVED with its value (the declared default where not given; Settings mirrors
    the C++ table). Every later step reads them from here; none is read back from the planner."""
    settings = dict(options, method=method, device=str(device))
    for name, kind in RESOLVED.items():
        settings[name] = kind(settings.get(name, getattr(Settings, name)))
    return settings


__all__ = ["Program", "RESOLVED", "resolved", "plan"]
