"""Option precision on the TorchScript path: bf16 plans the graph once more with its matrix products and
convolutions in bfloat16 (on a CPU with bf16 instructions, or CUDA), kept where its outputs stay within
the tolerance of float32's and it measures faster; the report says what was lowered, its error and both
times; a saved module keeps its lowered operators; beyond the tolerance, on the example inputs or on a
calibration input, the module stays float32 (and strict=True raises); fp16 on a CPU lowers nothing and
says why. The C++ CLI reads calibration inputs from a file (--calibration) and refuses a bad one before any
work.

Tolerances: bfloat16 keeps 8 significant bits, so one product moves its result by about 2^-8 = 3.9e-3 of
its scale; through two linears 0.05 admits that with room, and 1e-7 (below float32's own rounding of
these sums) cannot. The MLP is wide enough (64 x 1024 x 4096) that bf16's kernels on a CPU with bf16
instructions run it well over 2 % faster than float32's, so the lowered plan is kept."""
import json
import subprocess

import pytest
import torch

import autograph
from cpu_features import needs_bf16_cpu
from precision_models import Cancelling


class Mlp(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.up = torch.nn.Linear(1024, 4096)
        self.down = torch.nn.Linear(4096, 1024)

    def forward(self, x):
        return torch.layer_norm(self.down(torch.nn.functional.gelu(self.up(x))), (1024,))


@pytest.fixture(scope="module")
def mlp():
    torch.manual_seed(0)
    model = Mlp().eval()
    x = torch.randn(64, 1024)
    with torch.no_grad():
        want = model(x)
    return model, x, want


def _error(got, want):
    return ((got - want).abs().max() / want.abs().max()).item()


@needs_bf16_cpu
def test_bf16_lowers_the_products_and_a_saved_module_keeps_them(mlp, tmp_path, fresh_python):
    model, x, want = mlp
    optimized, report = autograph.optimize(model, [x], method="greedy", precision="bf16", tolerance=0.05)
    decision = report["precision"]
    assert 1e-4 < decision["error"] <= 0.05  # bf16's rounding: an error, within the bound
    # The export path's report["precision"] has these keys too (test_precision.py): one shape for both paths.
    assert {"asked", "tolerance", "kept", "error", "fp32_ms", "lowered_ms", "calibration_inputs", "judged_inputs",
            "note", "parts"} <= set(decision) and decision["judged_inputs"] == 1 + decision["calibration_inputs"]
    if decision["lowered_ms"] >= 0.98 * decision["fp32_ms"]:
        # A CPU whose bf16 GEMM (oneDNN's, without AMX) is slower than its float32 one (MKL's on a Xeon): the
        # decision follows the measurement, and there is nothing lowered to save.
        assert decision["kept"] == "fp32" and "measured no faster" in decision["note"], decision
        return
    assert decision["asked"] == "bf16" and decision["kept"] == "bf16", decision
    assert report["ops_lowered"] == 2
    assert [r["name"] for r in report["rewrites"]].count("lower_precision") == 1
    with torch.no_grad():
        here = optimized(x)
    assert here.dtype == torch.float32 and 1e-4 < _error(here, want) <= 0.05
    path = tmp_path / "mlp.pt"
    torch.jit.save(optimized, str(path))
    torch.save({"x": x, "here": here, "want": want}, tmp_path / "io.pt")
    fresh_python(
        "import torch, autograph\n"
        f"module = torch.jit.load({str(path)!r})\n"
        f"io = torch.load({str(tmp_path / 'io.pt')!r})\n"
        "with torch.no_grad():\n"
        "    got = module(io['x'])\n"
        "def error(a, b):\n"
        "    return ((a - b).abs().max() / b.abs().max()).item()\n"
        "# as in the optimizing process (bf16), not float32's output\n"
        "assert error(got, io['here']) == 0 and error(got, io['want']) > 1e-4, (error(got, io['here']), "
        "error(got, io['want']))\n"
        "print('ok')\n")


@needs_bf16_cpu
def test_bf16_beyond_the_tolerance_stays_fp32_and_strict_raises(mlp):
    model, x, want = mlp
    optimized, report = autograph.optimize(model, [x], method="greedy", precision="bf16", tolerance=1e-7)
    decision = report["precision"]
    assert decision["kept"] == "fp32" and "beyond the tolerance" in decision["note"], decision
    assert decision["error"] > 1e-7 and report["ops_lowered"] == 0
    with torch.no_grad():
        assert _error(optimized(x), want) <= 1e-5
    with pytest.raises(autograph.Error, match="strict: no program in bf16 met the tolerance"):
        autograph.optimize(model, [x], method="greedy", precision="bf16", tolerance=1e-7, strict=True)


@needs_bf16_cpu
def test_bf16_within_the_tolerance_on_the_example_but_not_on_a_calibration_input_stays_fp32():
    torch.manual_seed(0)
    model = Cancelling(256).eval()
    example = [0.01 * torch.randn(64, 256), 100 * torch.randn(64, 256)]
    calibration = [(100 * torch.randn(64, 256), 0.01 * torch.randn(64, 256))]
    _, report = autograph.optimize(model, example, method="greedy", precision="bf16", tolerance=0.02)
    decision = report["precision"]
    assert decision["error"] <= 0.02 and "beyond" not in (decision["note"] or ""), decision  # the example alone
    assert decision["calibration_inputs"] == 0
    optimized, report = autograph.optimize(model, example, method="greedy", precision="bf16", tolerance=0.02,
                                           calibration=calibration)
    decision = report["precision"]
    assert decision["kept"] == "fp32" and "beyond the tolerance" in decision["note"], decision
    assert decision["calibration_inputs"] == 1 and decision["error"] > 0.02 and report["ops_lowered"] == 0
    # Each run (the sibling linears may be one merged linear) tried and left in float32, with its error.
    assert decision["parts"] and all(p["precision"] == "fp32" and p["error"] > 0.02 for p in decision["parts"])
    with torch.no_grad():
        got, want = optimized(*calibration[0]), model(*calibration[0])
    assert _error(got, want) <= 1e-3  # float32's, on an output that is a small difference
    with pytest.raises(autograph.Error, match="strict: no program in bf16 met the tolerance"):
        autograph.optimize(model, example, method="greedy", precision="bf16", tolerance=0.02,
                           calibration=calibration, strict=True)


def test_fp16_on_a_cpu_lowers_nothing_and_says_why(mlp):
    model, x, want = mlp
    optimized, report = autograph.optimize(model, [x], method="greedy", precision="fp16")
    assert report["precision"]["kept"] == "fp32" and "fp16 is lowered on CUDA" in report["precision"]["note"]
    assert report["ops_lowered"] == 0
    with torch.no_grad():
        assert _error(optimized(x), want) <= 1e-5



needs_cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")


@needs_cuda
@pytest.mark.parametrize("precision", ["bf16", "fp16"])
def test_cuda_lowers_bf16_and_fp16_and_the_module_keeps_the_users_dtypes(mlp, precision):
    model = Mlp().eval().cuda()
    model.load_state_dict(mlp[0].state_dict())
    x = mlp[1].cuda()
    with torch.no_grad():
        want = model(x)
    optimized, report = autograph.optimize(model, [x], method="greedy", precision=precision, tolerance=0.05)
    decision = report["precision"]
    assert decision["asked"] == precision and 1e-5 < decision["error"] <= 0.05, decision
    if decision["kept"] == precision:  # else the TF32 twin was judged after it, and the note says why
        assert report["ops_lowered"] == 2 and decision["lowered_ms"] < 0.98 * decision["fp32_ms"]
    else:
        assert precision in decision["note"], decision
    with torch.no_grad():
        got = optimized(x)
    assert got.dtype == torch.float32 and _error(got, want) <= 0.05


class _ScaledCancelling(torch.nn.Module):
    """Cancelling with its inputs scaled inside, so that the C++ CLI's example inputs (standard normal)
    are the small-difference, large-passthrough case that bfloat16 computes within the tolerance."""

    def __init__(self):
        super().__init__()
        self.inner = Cancelling(256)

    def forward(self, x, passthrough):
        return self.inner(0.01 * x, 100 * passthrough)


def _cli_optimize(cli, tmp_path, *flags):
    torch.manual_seed(0)
    model = tmp_path / "cancelling.pt"
    torch.jit.trace(_ScaledCancelling().eval(), (torch.randn(64, 256), torch.randn(64, 256))).save(str(model))
    return subprocess.run([cli, "optimize", str(model), "-o", str(tmp_path / "o.pt"), "--input-shape", "64,256",
                           "--input-shape", "64,256", "--method", "greedy", *map(str, flags)],
                          capture_output=True, text=True, timeout=300)


@needs_bf16_cpu
def test_the_clis_calibration_file_reaches_the_accuracy_gate(cli, tmp_path):
    like_example = tmp_path / "like_example.pt"
    torch.save([(torch.randn(64, 256), torch.randn(64, 256))] * 2, str(like_example))
    r = _cli_optimize(cli, tmp_path, "--precision", "bf16", "--tolerance", "0.02", "--calibration", like_example,
                      "--json")
    assert r.returncode == 0, r.stderr
    decision = json.loads(r.stdout)["precision"]
    assert decision["calibration_inputs"] == 2 and decision["error"] <= 0.02, decision
    # A call whose difference is large beside its passthrough: bf16 misses the tolerance there.
    unlike = tmp_path / "unlike.pt"
    torch.save([(100 * torch.randn(64, 256), 1e-4 * torch.randn(64, 256))], str(unlike))
    r = _cli_optimize(cli, tmp_path, "--precision", "bf16", "--tolerance", "0.02", "--calibration", unlike, "--json")
    assert r.returncode == 0, r.stderr
    decision = json.loads(r.stdout)["precision"]
    assert decision["kept"] == "fp32" and "beyond the tolerance" in decision["note"], decision
    assert decision["calibration_inputs"] == 1 and decision["error"] > 0.02


def test_bad_calibration_files_are_one_line_errors_before_any_work(cli, tmp_path):
    junk, listed_dict, wrong_shape = tmp_path / "junk.pt", tmp_path / "dict.pt", tmp_path / "wrong.pt"
    junk.write_text("not a torch.save file")
    torch.save({"x": torch.randn(64, 256)}, str(listed_dict))
    torch.save([(torch.randn(64, 128), torch.randn(64, 256))], str(wrong_shape))
    for path, said in ((tmp_path / "absent.pt", ": no such file"),
                       (junk, ": not a file of input tuples saved by torch.save"),
                       (listed_dict, ": a list of input tuples, one per call to check"),
                       (wrong_shape, "optimize: calibration input 0, argument 0: Float [64, 128]; the example's is "
                                     "Float [64, 256]")):
        r = _cli_optimize(cli, tmp_path, "--precision", "bf16", "--calibration", path)
        lines = r.stderr.strip().splitlines()
        assert r.returncode == 2 and len(lines) == 1 and said in lines[0], (path, r.stderr)
        assert lines[0].startswith("autograph: error: ") and not (tmp_path / "o.pt").exists()
