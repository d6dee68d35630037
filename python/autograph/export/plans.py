"""Calls into the C++ planner (torch.ops.autograph.optimize_exported): an AtenGraph and its tensors in,
the program text and the report out."""
import json
from typing import Any, Dict, List, NamedTuple, Optional, Tuple

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
    try:
        program, report = torch.ops.autograph.optimize_exported(json.dumps(graph), tensors, json.dumps(settings))
    except (RuntimeError, ValueError) as e:
        raise translate(e) from None
    return program, json.loads(report)


def planned(graph: Dict[str, Any], tensors: List[torch.Tensor], settings: Dict[str, Any]) -> Tuple[str, Dict[str, Any]]:
    """plan, its report without the resolved options that only the first plan passes on."""
    program, report = plan(graph, tensors, settings)
    for key in RESOLVED:
        report.pop(key, None)
    return program, report


# The options the export path reads itself, resolved once (resolved) to their values.
RESOLVED = ("inductor", "openvino", "check_rewrites")


def resolved(options: Dict[str, Any], method: str, device: torch.device) -> Dict[str, Any]:
    """The settings of one optimize, resolved once before any work: `options` as given, the method and
    device, and each of RESOLVED with its value (the declared default where not given; Settings mirrors
    the C++ table). Every later step reads them from here; none is read back from the planner."""
    settings = dict(options, method=method, device=str(device))
    for name in RESOLVED:
        settings[name] = bool(settings.get(name, getattr(Settings, name)))
    return settings


def verified_plan(graph: Dict[str, Any], weights: List[torch.Tensor], tensors: List[torch.Tensor],
                  settings: Dict[str, Any]) -> Optional[Program]:
    """The plan on ATen's kernels planned again with on-board verification (the search's best schedules
    and the one-stream and Nimble's, timed side by side), where the method verifies; else None."""
    if not verifies(settings):
        return None
    program, report = planned(graph, weights + tensors, settings)
    return Program(program, weights, report, 0)


def verifies(settings: Dict[str, Any]) -> bool:
    """Whether the method verifies its plan on board (autograph, with option verify above 0)."""
    return settings["method"] == "autograph" and settings.get("verify", Settings.verify) > 0


__all__ = ["Program", "RESOLVED", "resolved", "plan", "planned", "verified_plan", "verifies"]
