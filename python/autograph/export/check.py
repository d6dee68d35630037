"""How the export path judges a compiled candidate's outputs (export._with_compiled_parts).

The reference is the plan on ATen's kernels in full float32 precision: where the user's settings let
matmuls or convolutions round their inputs (TF32 in cuBLAS and cuDNN, TF32 or bfloat16 in oneDNN), the
plan runs once more with those switches off (full_precision), and its own outputs under the user's
settings measure how far that rounding moves them (the user's error, relative to each output's
scale). A candidate runs under the user's settings too, so it is allowed FACTOR times that error, and
never less than the float32 floor. Where nothing rounds (CPU by default, or TF32 turned off) the
reference is the plan's outputs themselves and the bound is the floor.
"""
import contextlib
import math
import warnings
from typing import Any, Callable, Dict, Iterator, List, Optional, Sequence, Tuple

import torch

# How far a candidate may be from the reference, relative to each output's largest magnitude, in
# float32: Inductor folds BatchNorm into weights, fuses arithmetic and reorders reductions (measured
# far below this on the zoo in float32: bench/results/export-path-inductor-2026-11-25-cpu); a wrong
# wiring or part moves outputs by order 1. Lower-precision outputs get their dtype's resolution times 8.
FLOOR = 1e-3

# A candidate computed at the user's reduced precision carries about as much rounding error as the
# plan's own run under those settings (the user's error), in a direction of its own; its kernels also
# differ (other tilings and split reductions, other convolution algorithms, BatchNorm folded into the
# weights before they are rounded), and the largest error over an output's elements varies from one
# computation to the next. Twice the user's error covers two roundings of the same size; twice again
# covers kernels that round more often. A wrong wiring still moves outputs by order 1, far above four
# times a rounding error of about 1e-3 of the scale.
FACTOR = 4.0

# (backend, operator) of the float32 precision switches that reach a device's kernels.
_SWITCHES = {"cuda": (("cuda", "matmul"), ("cuda", "conv"), ("cuda", "rnn")),
             "cpu": (("mkldnn", "matmul"), ("mkldnn", "conv"), ("mkldnn", "rnn"))}
_REDUCED = ("tf32", "bf16")


def _has_precision_switches() -> bool:
    return hasattr(torch._C, "_get_fp32_precision_getter") and hasattr(torch._C, "_set_fp32_precision_setter")


def _precision(backend: str, op: str) -> str:
    return torch._C._get_fp32_precision_getter(backend, op)


def _set_precision(backend: str, op: str, value: str) -> None:
    """Sets one switch to `value`, leaving it to inherit its backend's (or the global) setting where
    that gives the same value."""
    torch._C._set_fp32_precision_setter(backend, op, "none")
    if _precision(backend, op) != value:
        torch._C._set_fp32_precision_setter(backend, op, value)


def reduced_switches(device: torch.device) -> List[Tuple[str, str]]:
    """The precision switches of `device`'s kernels that the current settings set to round float32
    inputs (TF32, or oneDNN's bfloat16)."""
    kind = torch.device(device).type
    if not _has_precision_switches():  # the legacy flags alone
        if kind != "cuda":
            return []
        return [s for s, on in ((("cuda", "matmul"), torch.backends.cuda.matmul.allow_tf32),
                                (("cuda", "conv"), torch.backends.cudnn.allow_tf32)) if on]
    return [s for s in _SWITCHES.get(kind, ()) if _precision(*s) in _REDUCED]


def _read(getter: Callable[[], Any]) -> Any:
    """A legacy flag's value, or None where torch refuses to read it (legacy and new settings mixed)."""
    try:
        return getter()
    except RuntimeError:
        return None


@contextlib.contextmanager
def full_precision(device: torch.device) -> Iterator[bool]:
    """Runs the body with float32 matmuls and convolutions on `device` in full precision (TF32 and
    bfloat16 rounding off), and gives the user's settings back afterwards, also when the body raises.
    Yields whether anything had to change (reduced_switches); nothing is touched where nothing rounds.
    Each switch gets back the value it had (inheriting its backend's where that is the same), and the
    legacy flags (the float32 matmul precision, cuDNN's allow_tf32) theirs."""
    reduced = reduced_switches(device)
    if not reduced:
        yield False
        return
    matmul = any(op == "matmul" for _, op in reduced)
    cudnn = ("cuda", "conv") in reduced or ("cuda", "rnn") in reduced
    switches = set(reduced) | ({("cuda", "matmul"), ("mkldnn", "matmul")} if matmul else set())
    saved = {s: _precision(*s) for s in switches} if _has_precision_switches() else {}
    # The legacy flags change with the switches where torch can read them (it refuses to run a matmul
    # whose legacy flag disagrees with the switch); where it cannot, they disagree already and stay so.
    cublas = _read(torch._C._get_cublas_allow_tf32) if ("cuda", "matmul") in reduced else None
    matmul_precision = _read(torch._C._get_float32_matmul_precision) if matmul else None
    cudnn_tf32 = _read(torch._C._get_cudnn_allow_tf32) if cudnn else None
    try:
        if matmul_precision is not None or cublas:
            torch._C._set_float32_matmul_precision("highest")  # both matmul switches to full precision
        if cudnn_tf32 is not None:
            torch._C._set_cudnn_allow_tf32(False)
        for switch in reduced if saved else ():
            _set_precision(*switch, "ieee")
        yield True
    finally:
        if matmul_precision is not None:
            torch._C._set_float32_matmul_precision(matmul_precision)
        elif cublas:
            torch._C._set_cublas_allow_tf32(True)
        if cudnn_tf32 is not None:
            torch._C._set_cudnn_allow_tf32(cudnn_tf32)
        for switch, value in saved.items():
            _set_precision(*switch, value)


def floor_of(dtype: torch.dtype) -> float:
    """The bound a floating-point output of `dtype` never goes below (FLOOR, or 8 steps of its
    resolution where that is coarser)."""
    return max(FLOOR, 8 * torch.finfo(dtype).eps)


def bound_of(dtype: torch.dtype, user_error: float) -> float:
    """How far (relative to the output's scale) a candidate's output of `dtype` may be from the
    reference when the plan's own run under the user's settings is `user_error` from it: exact for
    integer and boolean outputs, else max(floor_of(dtype), FACTOR * user_error)."""
    if not dtype.is_floating_point and not dtype.is_complex:
        return 0.0
    return max(floor_of(dtype), FACTOR * user_error if math.isfinite(user_error) else 0.0)


def _deviation(got: torch.Tensor, want: torch.Tensor) -> Tuple[float, float]:
    """The largest |got - want| (NaN where either holds a NaN or an infinity) and `want`'s largest
    magnitude, in double precision, integers included."""
    if not want.numel():
        return 0.0, 0.0
    wide = torch.complex128 if want.is_complex() or got.is_complex() else torch.float64
    w = want.to(wide)
    return (got.to(wide) - w).abs().max().item(), w.abs().max().item()


def relative_error(got: torch.Tensor, want: torch.Tensor) -> float:
    """The largest |got - want| over `want`'s largest magnitude (NaN where either holds a NaN or an
    infinity)."""
    return _relative(*_deviation(got, want))


def _relative(diff: float, scale: float) -> float:
    """`diff` over `scale`; an output of all zeros is measured by `diff` itself. No floor on the scale:
    an output legitimately far below one (a model whose activations shrink layer by layer) must not have
    its error shrunk by a floor it falls under."""
    if scale != scale:  # a NaN scale stays NaN
        return math.nan
    return diff / scale if scale > 0 else diff


def rounded(x: float) -> Optional[float]:
    """x for the report (JSON): three significant digits, None where it is not finite."""
    return float(f"{x:.3g}") if math.isfinite(x) else None


class Reference:
    """The plan's outputs in full float32 precision, how far its outputs under the user's settings
    are from them (per output, relative to its scale) and, from that, each output's bound (bound_of).
    `user_outputs` None: nothing rounds under the user's settings, `outputs` are theirs."""

    def __init__(self, outputs: Sequence[torch.Tensor], user_outputs: Optional[Sequence[torch.Tensor]] = None):
        self.outputs = list(outputs)
        self.reduced = user_outputs is not None
        self.user_errors = [relative_error(u, r) for u, r in zip(user_outputs, self.outputs)] if self.reduced \
            else [0.0] * len(self.outputs)
        self.bounds = [bound_of(r.dtype, e) for r, e in zip(self.outputs, self.user_errors)]

    def judge(self, got: Sequence[torch.Tensor], what: str, positions: Optional[Sequence[int]] = None,
              tolerance: Optional[float] = None) -> Tuple[float, Optional[str], Optional[float]]:
        """How `got` (the outputs of `what`; `positions`: which of the reference's outputs they are,
        all by default) compares: its largest relative error over the outputs, why it is wrong (None
        where every output is within its bound) and the bound of the output that is not. `tolerance`:
        the user's bound for a candidate computing below float32 (option tolerance), in place of each
        floating-point output's own; integer outputs stay exact."""
        positions = range(len(self.outputs)) if positions is None else positions
        bounds = self.bounds if tolerance is None else [tolerance if b > 0 else b for b in self.bounds]
        worst, why, missed = 0.0, None, None
        for k, (g, p) in enumerate(zip(got, positions)):
            e = self.outputs[p]
            if g.shape != e.shape or g.dtype != e.dtype:
                return math.inf, f"output {k} is {tuple(g.shape)} {g.dtype}, {what}'s {tuple(e.shape)} {e.dtype}", None
            diff, scale = _deviation(g, e)
            err = _relative(diff, scale)
            worst = err if math.isnan(err) or math.isnan(worst) else max(worst, err)
            if why is None and not err <= bounds[p]:  # also catches NaN
                missed = bounds[p]
                why = (f"output {k} differs from {what}'s" if missed == 0.0 else
                       f"output {k} is {diff:.3g} from {what}'s (scale {scale:.3g}; "
                       f"tolerance {missed:.3g} of the scale)")
        return worst, why, missed

    def summary(self) -> Dict[str, Any]:
        """For the report: whether the user's settings round (and the reference ran apart), the user's
        error and the bound (the largest over the outputs; the floor where no output is a float)."""
        floats = [b for r, b in zip(self.outputs, self.bounds) if r.is_floating_point() or r.is_complex()]
        user = math.nan if any(math.isnan(e) for e in self.user_errors) else max(self.user_errors, default=0.0)
        return {"reduced_precision": self.reduced, "user_error": rounded(user),
                "bound": rounded(max(floats, default=FLOOR))}


def reference_of(user_outputs: Sequence[torch.Tensor], device: torch.device,
                 run_in_full: Callable[[], Sequence[torch.Tensor]]) -> Reference:
    """The Reference of a plan whose outputs under the user's settings are `user_outputs`: where
    something rounds on `device`, `run_in_full()` (the plan run once more) gives the outputs in full
    precision; elsewhere it is not called."""
    with full_precision(device) as changed:
        full = list(run_in_full()) if changed else None
    return Reference(full, user_outputs) if full is not None else Reference(user_outputs)


# What the runtime warns when a program it was to replay as a CUDA Graph runs without one.
_LEFT_GRAPH = ("capturing a CUDA Graph failed", "runs without a graph")


def left_cuda_graph(messages: Sequence[str]) -> bool:
    """Whether `messages` (warnings a program's runs raised) say that it runs without its CUDA Graph."""
    return any(marker in m for m in messages for marker in _LEFT_GRAPH)


class RecordedWarnings:
    """The warnings raised in its body (the candidates' checks and timing: a CUDA Graph whose capture
    failed, as the runtime's TORCH_WARN reports it), each with the candidate whose run raised it where
    one did (running): for the report, and shown on leaving, once each, as they would have been."""

    def __init__(self) -> None:
        self._catcher = warnings.catch_warnings(record=True)
        self.caught: List[warnings.WarningMessage] = []
        self._owner: Dict[int, str] = {}

    def __enter__(self) -> "RecordedWarnings":
        self.caught = self._catcher.__enter__()
        warnings.simplefilter("always")  # every one recorded; the user's filters apply when they are shown
        return self

    def __exit__(self, *exc: Any) -> None:
        self._catcher.__exit__(*exc)
        shown = set()
        for w in self.caught:
            if (w.category, str(w.message)) not in shown:
                shown.add((w.category, str(w.message)))
                warnings.warn_explicit(w.message, w.category, w.filename, w.lineno, source=w.source)

    @contextlib.contextmanager
    def running(self, name: str) -> Iterator[None]:
        """The warnings raised in the body are `name`'s."""
        first = len(self.caught)
        try:
            yield
        finally:
            for w in self.caught[first:]:
                self._owner.setdefault(id(w), name)

    def listed(self) -> List[Dict[str, Any]]:
        """Each warning once (per candidate), with its candidate (None: raised while timing or planning)."""
        seen, listed = set(), []
        for w in self.caught:
            text = f"{w.category.__name__}: {str(w.message).splitlines()[0] if str(w.message) else ''}"[:300]
            entry = (self._owner.get(id(w)), text)
            if entry not in seen:
                seen.add(entry)
                listed.append({"candidate": entry[0], "message": text})
        return listed

    def of(self, name: str) -> List[str]:
        """The warnings `name`'s runs raised."""
        return [entry["message"] for entry in self.listed() if entry["candidate"] == name]
