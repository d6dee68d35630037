"""Option accuracy against labels (labelled): the user's score of (outputs, labels), one label per
calibration input, for models judged by what users measure on labelled data (top-1 accuracy, mAP, WER)
rather than by agreement with float32's outputs. The export path's gate judges by it (export/measure.py)."""
from typing import Any, Callable, Sequence

import torch

from .errors import InputError

Outputs = Sequence[Sequence[torch.Tensor]]  # one list of output tensors per judged input


class Labelled:
    """A measure of (outputs, labels): `score(outputs, labels)`, higher is better, over the calibration
    inputs, `labels[k]` calibration input k's (whatever the function reads: a class, boxes, a transcript).
    The example input, which has no label, is not judged by it. Made by labelled()."""

    def __init__(self, score: Callable[[Outputs, Sequence[Any]], float], labels: Sequence[Any]):
        if not callable(score):
            raise InputError(f"labelled: the score is a function of (outputs, labels), not {type(score).__name__}")
        if isinstance(labels, (str, bytes, torch.Tensor)) or not isinstance(labels, Sequence) or len(labels) == 0:
            empty = isinstance(labels, Sequence) and not isinstance(labels, torch.Tensor) and len(labels) == 0
            raise InputError("labelled: labels is a list with one label per calibration input "
                             f"(e.g. [3, 7, ...]), not {'an empty one' if empty else type(labels).__name__}")
        self.score, self.labels = score, list(labels)
        self.__name__ = getattr(score, "__name__", type(score).__name__)

    def __call__(self, outputs: Outputs, labels: Sequence[Any]) -> float:
        return self.score(outputs, labels)


def labelled(score: Callable[[Outputs, Sequence[Any]], float], labels: Sequence[Any]) -> Labelled:
    """Option accuracy judged against labels: `score(outputs, labels)` (outputs: one list of output tensors
    per calibration input; labels: `labels`, one per calibration input, in their order), higher is
    better; option tolerance bounds its drop from float32's own score. Pass the same number of labels as
    calibration inputs (optimize raises an InputError otherwise, before any work)."""
    return Labelled(score, labels)


def check_labels(measure: Any, calibration: int) -> None:
    """InputError where `measure` is labelled and its labels are not one per calibration input."""
    if isinstance(measure, Labelled) and len(measure.labels) != calibration:
        raise InputError(f"option accuracy: {len(measure.labels)} labels for {calibration} calibration inputs; "
                         "pass one label per calibration input, in their order")


__all__ = ["Labelled", "Outputs", "check_labels", "labelled"]
