"""Calibration inputs (optimize's `calibration`): more inputs than the example on which a candidate
computing below float32 must meet option tolerance. Checked and flattened here, before any work."""
from typing import Any, Dict, List, Optional, Sequence

import torch
from torch.utils import _pytree as pytree

from ..errors import InputError

# Option precision int8 quantizes on the calibration inputs: the activations' ranges are estimated from
# the values seen there, and a handful of calls sees too few of a model's values to bound them.
INT8_CALIBRATION_INPUTS = 8


def check_enough(precision: str, count: int) -> None:
    """InputError where option precision `precision` needs more calibration inputs than `count`."""
    if precision == "int8" and count < INT8_CALIBRATION_INPUTS:
        raise InputError(f"precision int8 quantizes on the calibration inputs: pass at least {INT8_CALIBRATION_INPUTS} "
                         f"(calibration=[(x1,), (x2,), ...], drawn from the data the model will see), not {count}")


def calibration_sets(calibration: Optional[Sequence[Any]], example_inputs: Sequence[Any],
                     example_kwargs: Optional[Dict[str, Any]]) -> List[List[torch.Tensor]]:
    """Each entry of `calibration` (a tuple of positional inputs like `example_inputs`, or one tensor;
    the keyword inputs stay the example's) as the flat list of its tensors, in the example's order.
    InputError where an entry is not structured like the example or a tensor differs from the example's
    in dtype or shape (the plan and its compiled candidates are made for the example's shapes)."""
    if calibration is None:
        return []
    if isinstance(calibration, (torch.Tensor, dict)) or not isinstance(calibration, (list, tuple)):
        raise InputError("calibration: a list of input tuples, one per call to check (e.g. [(x1,), (x2,)]), "
                         f"not {type(calibration).__name__}")
    kwargs = dict(example_kwargs or {})
    want, spec = pytree.tree_flatten((tuple(example_inputs), kwargs))
    sets = []
    for k, entry in enumerate(calibration):
        entry = (entry,) if isinstance(entry, torch.Tensor) else entry
        if not isinstance(entry, (list, tuple)):
            raise InputError(f"calibration[{k}]: a tuple of inputs like the example's, not {type(entry).__name__}")
        flat, entry_spec = pytree.tree_flatten((tuple(entry), kwargs))
        if entry_spec != spec:
            raise InputError(f"calibration[{k}] is not structured like the example inputs "
                             f"({len(flat)} leaves against {len(want)}): pass one tuple of positional inputs per call")
        for i, (got, example) in enumerate(zip(flat, want)):
            if isinstance(example, torch.Tensor) != isinstance(got, torch.Tensor) or (
                    isinstance(got, torch.Tensor) and (got.dtype != example.dtype or got.shape != example.shape)):
                raise InputError(f"calibration[{k}], input {i}: {_described(got)}; the example's is "
                                 f"{_described(example)} (calibration inputs take the example's dtypes and shapes)")
        sets.append([t for t in flat if isinstance(t, torch.Tensor)])
    return sets


def _described(x: Any) -> str:
    return f"{x.dtype} {tuple(x.shape)}" if isinstance(x, torch.Tensor) else type(x).__name__


__all__ = ["INT8_CALIBRATION_INPUTS", "calibration_sets", "check_enough"]
