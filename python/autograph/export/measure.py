"""Option accuracy: how far a lowered candidate's outputs are from float32's over every judged input (the
example's, then each calibration input's), as a loss that option tolerance bounds. The built-ins
(max_error, top1, cosine, sqnr) are the C++ library's (core/output_error.h: the TorchScript path judges
by the same code); a Python function of (outputs, float32 outputs) gives a score, higher is better, and
its loss is the score's drop from float32's own (the function on float32's outputs against themselves)."""
import math
from typing import Callable, List, Sequence, Tuple, Union

import torch

from ..errors import InputError

Outputs = Sequence[Sequence[torch.Tensor]]  # one list of output tensors per judged input
Measure = Union[str, Callable[[Outputs, Outputs], float]]


def name_of(measure: Measure) -> str:
    """The measure as the report names it: a built-in's name, or the function's."""
    return measure if isinstance(measure, str) else getattr(measure, "__name__", type(measure).__name__)


def measured(measure: Measure, got: Outputs, want: Outputs) -> Tuple[float, List[float]]:
    """(the loss over all judged inputs, each input's own): `got[k]` are a candidate's outputs on judged
    input k, `want[k]` float32's. A function that raises or returns no number is an InputError naming it:
    the user's measure, not the candidate, is wrong."""
    if isinstance(measure, str):
        flat_got = [t for outputs in got for t in outputs]
        flat_want = [t for outputs in want for t in outputs]
        values = list(torch.ops.autograph.measure_outputs(measure, flat_got, flat_want, len(got)))
        return values[0], values[1:]
    per_input = [_score(measure, [w], [w]) - _score(measure, [g], [w]) for g, w in zip(got, want)]
    return _score(measure, want, want) - _score(measure, got, want), per_input


def _score(measure: Callable[[Outputs, Outputs], float], got: Outputs, want: Outputs) -> float:
    try:
        score = measure([list(g) for g in got], [list(w) for w in want])
        value = float(score.item() if isinstance(score, torch.Tensor) else score)
    except Exception as e:  # noqa: BLE001 - the user's function: one clear error
        raise InputError(f"option accuracy: {name_of(measure)}(outputs, float32 outputs) failed: "
                         f"{type(e).__name__}: {e} (it takes two lists, one entry per judged input, each a list of "
                         "output tensors, and returns a number, higher is better)") from None
    return value if math.isfinite(value) else math.nan


__all__ = ["Measure", "measured", "name_of"]
