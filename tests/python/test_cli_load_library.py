"""`autograph --load-library LIB.so`: a model that calls a custom operator of the user's own library
loads, optimizes and matches the original once that library is loaded; without it the error names
the operator and says what to do."""
import os
import subprocess
from pathlib import Path

import torch

import autograph

ROOT = Path(__file__).resolve().parents[2]


def _test_ops_library() -> str:
    path = Path(os.environ.get("AUTOGRAPH_BUILD_DIR", ROOT / "build")) / "libautograph_test_ops.so"
    assert path.exists(), f"{path} missing: build the tests (scripts/build.sh)"
    return str(path)


class CallsCustomOp(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.a = torch.nn.Linear(16, 16)
        self.b = torch.nn.Linear(16, 16)

    def forward(self, x):
        return torch.ops.autograph_test_ops.scaled_add(torch.relu(self.a(x)), torch.sigmoid(self.b(x)), 0.5)


def test_custom_op_model_optimizes_with_its_library(cli, tmp_path):
    library = _test_ops_library()
    torch.ops.load_library(library)
    torch.manual_seed(0)
    model = torch.jit.script(CallsCustomOp().eval())
    path, out = tmp_path / "custom.pt", tmp_path / "custom.opt.pt"
    model.save(str(path))
    common = ["optimize", str(path), "-o", str(out), "--method", "nimble", "--input-shape", "4,16"]

    r = subprocess.run([cli, *common], capture_output=True, text=True, timeout=300)
    assert r.returncode == 2 and "autograph_test_ops::scaled_add" in r.stderr and "--load-library" in r.stderr, r.stderr

    r = subprocess.run([cli, *common, "--load-library", library, "--json"], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    x = torch.randn(4, 16)
    with torch.no_grad():
        want, got = model(x), autograph.load(out)(x)
    assert (got - want).abs().max().item() <= 1e-5 * want.abs().max().item()

    r = subprocess.run([cli, "--load-library", str(tmp_path / "missing.so"), *common], capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 2 and "--load-library" in r.stderr and "missing.so" in r.stderr, r.stderr
