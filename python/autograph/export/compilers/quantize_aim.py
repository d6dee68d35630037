"""The aim of a quantizing process (openvino_quantize.py, onnxruntime_quantize.py): the loss by autograph's
built-in accuracy measure (core/output_error, through autograph's library, loaded into the process) of a
quantized model's outputs against the float32 model's, over the judged inputs: the loss option tolerance
bounds, as the contest computes it. It imports nothing of autograph: those processes, which have no autograph
on their sys.path, run it by path."""
from typing import Any, Callable, Dict, List, Sequence

Outputs = Sequence[Sequence["numpy.ndarray"]]  # noqa: F821 - each judged input's outputs in order


def loss_by(aim: Dict[str, Any]) -> Callable[[Outputs, Outputs], float]:
    """The aim's measure (aim["measure"], a built-in's name) as a function of (each judged input's outputs,
    each one's float32 outputs), with autograph's library at aim["library"] loaded into this process."""
    import numpy as np
    import torch
    torch.ops.load_library(aim["library"])

    def loss(got: Outputs, want: Outputs) -> float:
        flat_got: List[torch.Tensor] = [torch.from_numpy(np.array(o)) for outputs in got for o in outputs]
        flat_want: List[torch.Tensor] = [torch.from_numpy(np.array(o)) for outputs in want for o in outputs]
        return torch.ops.autograph.measure_outputs(aim["measure"], flat_got, flat_want, len(got))[0]
    return loss


__all__ = ["Outputs", "loss_by"]
