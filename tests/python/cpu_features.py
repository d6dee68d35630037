"""What this CPU can compute below float32, as pytest marks: OpenVINO and Inductor compute bf16 in bf16 only
with bf16 instructions (elsewhere in float32, or not at all), and OpenVINO's INT8 loses more without VNNI."""
import pytest

from autograph.export.compilers.inductor import cpu_has_bf16


def cpu_has_vnni() -> bool:
    try:
        with open("/proc/cpuinfo") as f:
            flags = f.read()
    except OSError:
        return True  # not Linux: let the test say
    return any(f in flags.split() for f in ("avx512_vnni", "avx_vnni", "amx_int8"))


needs_bf16_cpu = pytest.mark.skipif(not cpu_has_bf16(), reason="this CPU has no bf16 instructions")
needs_vnni = pytest.mark.skipif(not cpu_has_vnni(), reason="this CPU has no VNNI instructions")
