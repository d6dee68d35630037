"""What this CPU computes below float32, as the compilers read it: a fact of the machine, not of a compiler.

oneDNN (Inductor's and OpenVINO's CPU kernels) computes bfloat16 with AVX-512 (BW, VL, DQ: emulated) or with
bf16 instructions (AVX-512 BF16, AMX). Elsewhere Inductor lowers nothing to bf16, and OpenVINO's CPU plugin
leaves a bf16 precision hint unapplied: it computes float32 (on an AVX2-only CPU, its "bf16" program gave
float32's errors), so a candidate offered as bf16 there would be float32 under a bf16 label.
"""
import functools

import torch


@functools.lru_cache(maxsize=None)
def cpu_has_bf16() -> bool:
    """Whether oneDNN computes bfloat16 on this CPU (torch's own check: AVX-512 or bf16 instructions)."""
    return bool(torch.backends.mkldnn.is_available() and torch.ops.mkldnn._is_mkldnn_bf16_supported())
