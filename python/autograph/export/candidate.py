"""One candidate of the contest (contest.py): a way to run the graph — a program (plans.Program: on
ATen's kernels, or calling compiled parts) or a part compiled just in time (JustInTime) — with its
report entry while it competes and, once it is out, why (one line in the report, the traceback in the
"autograph" logger)."""
import json
import traceback
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Dict, List, NamedTuple, Optional, Set, Union

import torch

from .parts import CompiledPart
from .plans import Program
from .program_format import body_of
from .progress import logger

if TYPE_CHECKING:  # the compilers import this module: their protocol is named, never imported, here
    from .compilers.base import Compiler


class JustInTime(NamedTuple):
    """A one-part Inductor candidate compiled just in time (PartBuilder.compile_just_in_time): timed and
    checked as a callable on the part's inputs, and packaged ahead of time only when it is kept."""
    call: Callable[..., Any]
    input_ids: List[int]
    output_ids: List[int]
    part: List[int]
    label: str
    freezing: bool
    precision: str = "fp32"  # below fp32: its matmuls and convolutions compute in it (module_of)

    def inputs(self, graph: Dict[str, Any], passed: List[torch.Tensor]) -> List[torch.Tensor]:
        """Its input tensors among those a program of `graph` is passed (its weights, then the user's)."""
        weights = [v for v, is_weight in zip(graph["inputs"], graph["weights"]) if is_weight]
        users = [v for v, is_weight in zip(graph["inputs"], graph["weights"]) if not is_weight]
        value = dict(zip(weights + users, passed))
        return [value[v] for v in self.input_ids]


class NotAvailable(str):
    """Why an optional compiler's candidate is missing (its package is not installed): reported like an
    error, but not one that strict=True raises for."""


def why_of(e: BaseException, what: str = "a candidate") -> str:
    """`e` in one line, for the report; its traceback goes to the "autograph" logger (debug), so that
    what failed inside a compiler can be found without running it again."""
    logger.debug("autograph: %s failed", what, exc_info=e)
    return f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"


# The compiled parts' operators, whose spec (the call's last argument) names the package's digest.
PART_OPS = ("autograph::run_inductor_part", "autograph::run_openvino_part", "autograph::run_onnxruntime_part")
# What the report calls the candidates no compiler made (the plans on ATen's kernels).
_LABELS = {"aten": "aten", "aten_cudnn": "aten with cuDNN's fused conv+relu",
           "mix": "a mix of compilers' parts"}


@dataclass
class Candidate:
    """`built`: what runs (None where it could not be built). `entry`: its report entry while it
    competes (error, median_ms...). `out`: why it left the contest ({"why", "detail", ...}), None while
    it competes. `error` / `traceback`: the one-line error and the traceback of a failure. `precision`:
    what its compiled parts compute in (below fp32: it must meet the option tolerance). What kind of
    candidate it is, as data (never parsed back from its name): `compiler`, the compiler of its parts
    (compilers/base.Compiler; None for a plan on ATen's kernels), and `kind`, what it is of that compiler's
    ("whole", "plan", "parts", "mix", ...; for a plan on ATen's kernels its graph: "aten", "aten_cudnn"), and
    `variant`, which of the compiler's ways of lowering to its precision made it (compilers/base.Compiler.
    variants; "" its first or only one)."""
    name: str
    built: Union[Program, JustInTime, None] = None
    entry: Dict[str, Any] = field(default_factory=dict)
    out: Optional[Dict[str, Any]] = None
    error: Optional[str] = None
    traceback: Optional[str] = None
    precision: str = "fp32"
    compiler: Optional["Compiler"] = None
    kind: str = ""
    variant: str = ""
    tried: Set[str] = field(default_factory=set)  # digests of packages loaded while it was made (lowering.py)
    # Its parts (AtenGraph node ids) and each compiled, where a compiler made them: what the mix profiles
    # (mixing.py) without reading the packages back; let go once the contest has mixed.
    parts: List[List[int]] = field(default_factory=list)
    compiled: List[CompiledPart] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.kind = self.kind or self.name

    @classmethod
    def of(cls, name: str, built: Union[Program, JustInTime], precision: str = "fp32",
           compiler: Optional["Compiler"] = None, kind: str = "", variant: str = "") -> "Candidate":
        if isinstance(built, JustInTime):
            entry = {"parts": 1, "compiled": "just in time"}
            if built.precision != "fp32":
                entry["precision"] = built.precision
            return cls(name, built, entry, precision=built.precision, compiler=compiler, kind=kind)
        entry = {"parts": built.parts} if precision == "fp32" else {"parts": built.parts, "precision": precision}
        if variant:
            entry["variant"] = variant
        return cls(name, built, entry, precision=precision, compiler=compiler, kind=kind, variant=variant)

    @property
    def label(self) -> str:
        """What the report's "chosen" calls it: its compiler and kind ("openvino whole", "inductor plan"),
        and the precision it computes in below fp32."""
        base = f"{self.compiler.label} {self.kind}" if self.compiler is not None else _LABELS.get(self.kind, self.kind)
        return base + (f" in {self.precision}" if self.lowered else "") + (f" ({self.variant})" if self.variant else "")

    @property
    def lowered(self) -> bool:
        return self.precision != "fp32"

    @classmethod
    def failed(cls, name: str, e: BaseException, why: str = "not built", precision: str = "fp32",
               compiler: Optional["Compiler"] = None, kind: str = "", variant: str = "") -> "Candidate":
        """A candidate that could not be built (`e`), or whose compiler is not installed (NotAvailable)."""
        candidate = cls(name, precision=precision, compiler=compiler, kind=kind, variant=variant)
        candidate.fail(why, e)
        return candidate

    @property
    def competing(self) -> bool:
        return self.out is None

    @property
    def package(self) -> Optional[Program]:
        """The program kept if this candidate wins; None for one compiled just in time (not packaged yet)."""
        return self.built if isinstance(self.built, Program) else None

    def fail(self, why: str, e: Union[BaseException, str], **extra: Any) -> None:
        """Out of the contest for an error (`e`: an exception, logged with its traceback, or a message)."""
        if isinstance(e, NotAvailable):
            why, self.error = "not available", str(e)
        elif isinstance(e, BaseException):
            self.error = why_of(e, self.name)
            self.traceback = "".join(traceback.format_exception(type(e), e, e.__traceback__))
        else:
            self.error = e
        self.drop(why, self.error, **extra)

    def drop(self, why: str, detail: Optional[str] = None, **extra: Any) -> None:
        """Out of the contest: `why` in a word or two, `detail` and `extra` for the report."""
        self.out = dict({"why": why}, **extra, **({"detail": detail} if detail is not None else {}))

    def call(self, graph: Dict[str, Any], aten_weights: List[torch.Tensor],
             tensors: List[torch.Tensor]) -> Callable[[], Any]:
        """The candidate as a call without arguments: its program run on its own weights and the user's
        `tensors`, or a JustInTime callable on its inputs among those of the ATen plan's program
        (`aten_weights`, then `tensors`), which `graph` places."""
        built = self.built
        if isinstance(built, JustInTime):
            inputs = built.inputs(graph, aten_weights + tensors)
            return lambda: built.call(*inputs)
        program, passed = built.text, built.weights + tensors
        return lambda: torch.ops.autograph.execute(passed, program)

    def output_positions(self, graph: Dict[str, Any]) -> Optional[List[int]]:
        """Which of the program's outputs the call returns (a JustInTime's are some of them); None: all."""
        if isinstance(self.built, JustInTime):
            return [graph["outputs"].index(v) for v in self.built.output_ids]
        return None

    def part_digests(self) -> Set[str]:
        """The digests of the compiled parts its program calls (none for a JustInTime: nothing loaded)."""
        if self.package is None:
            return set()
        digests = set()
        for node in body_of(self.package.text)["graph"]["nodes"]:
            if node.get("op") in PART_OPS:
                spec = next((a["str"] for a in reversed(node.get("args", []))
                             if isinstance(a, dict) and "str" in a), None)
                digest = json.loads(spec).get("digest") if spec else None
                if digest:
                    digests.add(digest)
        return digests


__all__ = ["Candidate", "JustInTime", "NotAvailable", "PART_OPS", "why_of"]
