"""The export path (torch.export): optimize_exported (optimize.py) and what it is built from, one
concern per module, lowest first: program_format (the program text's and AtenGraph JSON's names),
aten_import (ExportedProgram -> AtenGraph JSON), rewrites (BatchNorm folding, cuDNN fusions), cache (the
disk cache of compiled parts), timing (the one timing policy), check (how candidates' outputs are
judged), plans (calls into the C++ planner), compilers (Inductor, OpenVINO), candidates, contest
(compete: check, time, keep the fastest), shapes (other shapes), runtime (ExecuteProgram, the fake
kernel), optimize (the driver)."""
from .aten_import import aten_graph_of
from .optimize import optimize_exported
from .runtime import ExecuteProgram, register_fake

__all__ = ["aten_graph_of", "optimize_exported", "register_fake", "ExecuteProgram"]
