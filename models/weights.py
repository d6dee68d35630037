"""Deterministic, numerically plausible random weights for the zoo.

The zoo ships no trained weights. Parameters come from each module's own initialiser under
`torch.manual_seed(0)`; normalisation layers are then given non-trivial values so that graph
passes which rewrite them (conv+bn folding, layer_norm stitching) are exercised numerically:

* BatchNorm: affine weight ~ U(0.5, 1.5), bias ~ N(0, 0.1); running statistics are the
  statistics of the layer's input on a batch of random images (so activations stay O(1) through
  deep stacks instead of growing or vanishing geometrically; a batch, because one image misses
  the between-image variation of channel means), perturbed: mean += 0.1 * std * N(0, 1),
  var *= U(0.5, 1.5).
* LayerNorm: weight ~ U(0.8, 1.2), bias ~ N(0, 0.05).
"""
from typing import Sequence

import torch
import torch.nn.functional as F
from torch import nn

_BN_TYPES = (nn.BatchNorm1d, nn.BatchNorm2d, nn.BatchNorm3d)


def _generator(seed: int) -> torch.Generator:
    g = torch.Generator()
    g.manual_seed(seed)
    return g


def randomize_layer_norms(model: nn.Module, seed: int = 1) -> None:
    g = _generator(seed)
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, nn.LayerNorm) and m.elementwise_affine:
                m.weight.copy_(torch.rand(m.weight.shape, generator=g) * 0.4 + 0.8)
                if m.bias is not None:
                    m.bias.copy_(torch.randn(m.bias.shape, generator=g) * 0.05)


def randomize_batch_norms(model: nn.Module, calib_inputs: Sequence[torch.Tensor], seed: int = 1) -> None:
    """Random affine parameters; running statistics calibrated on `calib_inputs`, then perturbed.

    One eval-mode forward pass in which every BatchNorm measures the batch statistics of its
    actual input, stores perturbed statistics, and normalises with them (the eval formula), so
    each layer is calibrated for what its perturbed predecessors really produce: the
    perturbations do not compound with depth.
    """
    bns = [m for m in model.modules() if isinstance(m, _BN_TYPES)]
    if not bns:
        return
    g = _generator(seed)

    def calibrating_forward(m: nn.modules.batchnorm._BatchNorm):
        def forward(x: torch.Tensor) -> torch.Tensor:
            dims = [0] + list(range(2, x.dim()))
            var = x.var(dims, unbiased=True).clamp_min(1e-4)
            mean = x.mean(dims)
            m.running_mean.copy_(mean + var.sqrt() * torch.randn(var.shape, generator=g) * 0.1)
            m.running_var.copy_(var * (torch.rand(var.shape, generator=g) + 0.5))
            return F.batch_norm(x, m.running_mean, m.running_var, m.weight, m.bias, False, 0.0, m.eps)
        return forward

    was_training = model.training
    with torch.no_grad():
        for m in bns:
            if m.affine:
                m.weight.copy_(torch.rand(m.weight.shape, generator=g) + 0.5)
                m.bias.copy_(torch.randn(m.bias.shape, generator=g) * 0.1)
        model.eval()
        for m in bns:
            m.forward = calibrating_forward(m)
        try:
            model(*calib_inputs)
        finally:
            for m in bns:
                del m.forward
        model.train(was_training)
