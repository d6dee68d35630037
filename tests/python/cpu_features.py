"""What this CPU can compute below float32, as pytest marks: OpenVINO and Inductor offer bf16 only where
oneDNN computes it (autograph.export.compilers.cpu_features), and OpenVINO's INT8 loses more without VNNI.
(conftest's `offers_bf16` makes a test of the contest's logic see OpenVINO's bf16 candidates on any CPU.)"""
import pytest

from autograph.export.compilers.cpu_features import cpu_has_bf16


def cpu_has_vnni() -> bool:
    try:
        with open("/proc/cpuinfo") as f:
            flags = f.read()
    except OSError:
        return True  # not Linux: let the test say
    return any(f in flags.split() for f in ("avx512_vnni", "avx_vnni", "amx_int8"))


needs_bf16_cpu = pytest.mark.skipif(not cpu_has_bf16(), reason="this CPU computes no bf16 (no AVX-512)")
needs_vnni = pytest.mark.skipif(not cpu_has_vnni(), reason="this CPU has no VNNI instructions")
