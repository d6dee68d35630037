"""Option accuracy: how far a lowered candidate's outputs are from float32's over every judged input (the
example's, then each calibration input's), as a loss that option tolerance bounds. The built-ins
(max_error, top1, cosine, sqnr) are the C++ library's (core/output_error.h: the TorchScript path judges
by the same code); a Python function of (outputs, float32 outputs) gives a score, higher is better, and
its loss is the score's drop from float32's own (the function on float32's outputs against themselves);
a function of (outputs, labels) with a label per calibration input (labelled: top-1 accuracy, mAP, WER)
gives a score on the calibration inputs, its loss the drop from float32's score on them."""
import math
from typing import Any, Callable, List, Sequence, Tuple, Union

import torch

from ..errors import InputError
from ..labelled import Labelled, Outputs

Measure = Union[str, Callable[[Outputs, Outputs], float], Labelled]


def judged_inputs(measure: Measure, calibration: int) -> int:
    """How many inputs a lowered candidate is judged on by `measure`: the example's and the calibration
    inputs, or the calibration inputs alone where the measure reads labels."""
    return calibration if isinstance(measure, Labelled) else 1 + calibration


def name_of(measure: Measure) -> str:
    """The measure as the report names it: a built-in's name, or the function's."""
    return measure if isinstance(measure, str) else getattr(measure, "__name__", type(measure).__name__)


def measured(measure: Measure, got: Outputs, want: Outputs) -> Tuple[float, List[float]]:
    """(the loss over all judged inputs, each input's own): `got[k]` are a candidate's outputs on judged
    input k (the example's first, then each calibration input's), `want[k]` float32's. A function that
    raises or returns no number is an InputError naming it: the user's measure, not the candidate, is
    wrong."""
    if isinstance(measure, str):
        flat_got = [t for outputs in got for t in outputs]
        flat_want = [t for outputs in want for t in outputs]
        values = list(torch.ops.autograph.measure_outputs(measure, flat_got, flat_want, len(got)))
        return values[0], values[1:]
    if isinstance(measure, Labelled):  # the calibration inputs, each against its label
        got, want, against = got[1:], want[1:], measure.labels
        per_input = [_score(measure, [w], [a]) - _score(measure, [g], [a]) for g, w, a in zip(got, want, against)]
        return _score(measure, want, against) - _score(measure, got, against), per_input
    want = [list(w) for w in want]
    per_input = [_score(measure, [w], [w]) - _score(measure, [g], [w]) for g, w in zip(got, want)]
    return _score(measure, want, want) - _score(measure, got, want), per_input


def _score(measure: Callable[[Outputs, Any], float], got: Outputs, against: Sequence[Any]) -> float:
    try:
        score = measure([list(g) for g in got], list(against))
        value = float(score.item() if isinstance(score, torch.Tensor) else score)
    except Exception as e:  # noqa: BLE001 - the user's function: one clear error
        second, entry = (("labels", "a label") if isinstance(measure, Labelled) else
                         ("float32 outputs", "a list of output tensors"))
        raise InputError(f"option accuracy: {name_of(measure)}(outputs, {second}) failed: "
                         f"{type(e).__name__}: {e} (it takes two lists, one entry per judged input: a list of "
                         f"output tensors, and {entry}; it returns a number, higher is better)") from None
    return value if math.isfinite(value) else math.nan


__all__ = ["Measure", "judged_inputs", "measured", "name_of"]
