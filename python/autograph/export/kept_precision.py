"""Which precision the contest keeps, and the report's word on it: a candidate below float32 that is the
fastest is kept only where it is clearly faster than the fastest float32 one (float32_at_a_tie); the
report's "precision" entry (precision_entry), in the shape the TorchScript path's report["precision"] has
too."""
from typing import Any, Callable, Dict, List, Optional, Tuple

from .candidate import Candidate
from .compilers import COMPILERS
from .measure import judged_inputs, name_of
from ..settings import Settings

# A candidate below float32 is kept only where it runs at least this much faster than the fastest float32
# one: under it, within the timing's spread on a CPU, its precision would be given up for nothing (an INT8
# whole graph timed a hair faster than its float32 one ran no faster after it was kept).
LOWERED_GAIN = 0.03


def float32_at_a_tie(best: str, competing: Dict[str, Candidate], timed: Dict[str, float]
                     ) -> Tuple[str, Dict[str, str]]:
    """(`best`, the fastest of the `timed` candidates, or the fastest float32 one where `best` computes
    below float32 and runs less than LOWERED_GAIN faster than it; {best: why} in that case, else {})."""
    fp32 = [name for name in timed if not competing[name].lowered]
    if not competing[best].lowered or not fp32:
        return best, {}
    fastest = min(fp32, key=timed.get)
    if timed[best] * (1 + LOWERED_GAIN) < timed[fastest]:
        return best, {}
    return fastest, {best: f"under {LOWERED_GAIN:.0%} faster than {fastest} ({timed[fastest]:.4g} ms) in float32: "
                           "its precision would be given up for nothing"}


def precision_entry(candidates: Dict[str, Candidate], best: str, settings: Settings, calibration_inputs: int,
                    ran_right: Callable[[Candidate], bool], no_faster: Dict[str, str]) -> Dict[str, Any]:
    """The report's word on option precision: what was asked, the tolerance, what the kept program computes
    in, its error, the fastest float32 and lowered candidates' times, on how many inputs lowered candidates
    were judged (the example's and the calibration inputs: the bound is measured there, not promised
    elsewhere), by which measure, and its value on each of them for the kept program (empty where it
    computes in float32), why nothing was lowered where nothing was (or why a lowered candidate that met
    the tolerance was not kept, `no_faster`), and the kept program's parts with their precision; beside
    them the candidates lowered below float32 and those of them that met the tolerance (`ran_right`: still
    competing, or out though they ran right)."""
    lowered = sorted(name for name, c in candidates.items() if c.lowered)
    met = [name for name in lowered if ran_right(candidates[name])]
    kept = candidates[best]

    def fastest(names: List[str]) -> Optional[float]:
        times = [candidates[n].entry["median_ms"] for n in names if "median_ms" in candidates[n].entry]
        return min(times) if times else None

    fp32 = [n for n, c in candidates.items() if not c.lowered and ran_right(c)]
    parts = [{"operators": p.get("nodes"), "flops": p.get("flops"), "precision": p["precision"],
              "error": p.get("error")} for p in kept.entry.get("parts_precision", [])]
    entry = {"asked": settings.precision, "tolerance": settings.tolerance, "accuracy": name_of(settings.accuracy),
             "judged": kept.entry.get("measured", []), "kept": kept.precision, "error": kept.entry.get("error"),
             "fp32_ms": fastest(fp32), "lowered_ms": fastest(met), "calibration_inputs": calibration_inputs,
             "judged_inputs": judged_inputs(settings.accuracy, calibration_inputs),
             "note": None, "parts": parts, "lowered": lowered, "met": met}
    asked = settings.precision
    if not any(candidates[name].precision == asked for name in lowered):
        how = "; ".join(c.lowering() for c in COMPILERS)
        entry["note"] = (f"no compiler here lowers to {asked} on {settings.device} "
                         f"(every candidate does to tf32 on CUDA; {how}; the plan on ATen's kernels to bf16 and "
                         "fp16 on CUDA)" + ("" if lowered else ": everything ran in fp32"))
    elif no_faster:
        ((name, why),) = no_faster.items()
        entry["note"] = f"{name} met the tolerance, but ran {why}"
    return entry


__all__ = ["LOWERED_GAIN", "float32_at_a_tie", "precision_entry"]
