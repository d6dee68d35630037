"""The package as `pip install .` installs it (scripts/test.sh runs this file with AUTOGRAPH_TEST_INSTALLED=1
in a venv with the package installed, from outside the checkout): import autograph finds its library and
CLI inside the package with no environment variable, the `autograph` command works, and
torch.compile(backend="autograph") works through the torch_dynamo_backends entry point without
importing autograph first. Outputs compared with eager within 1e-4 of the output's scale (float32,
same CPU kernels; a wrong schedule moves outputs by order 1)."""
import os
import shutil
import subprocess
import sys
from pathlib import Path

import torch

import autograph

ROOT = Path(__file__).resolve().parents[2]


def _close(got, want, scale_tol=1e-4):
    assert got.shape == want.shape
    assert (got - want).abs().max().item() <= scale_tol * max(want.abs().max().item(), 1e-12)


def test_imported_from_the_installed_package_with_its_own_library():
    package = Path(autograph.__file__).resolve().parent
    assert ROOT / "python" not in package.parents and package != ROOT / "python" / "autograph", package
    assert "AUTOGRAPH_LIBRARY" not in os.environ and "AUTOGRAPH_CLI" not in os.environ
    library = Path(autograph.library_path())
    assert library.name == "libautograph.so" and library.exists()
    assert ROOT not in library.parents, f"{library} is the checkout's build, not the installed one"
    # The runtime, beside it, is what the library loads (its RUNPATH, $ORIGIN) and what servers preload.
    runtime = Path(autograph.runtime_library_path())
    assert runtime.exists() and runtime.parent == library.parent, runtime
    autograph.load_library()
    assert hasattr(torch.ops.autograph, "optimize")


def test_autograph_command_optimizes_a_zoo_model(zoo, tmp_path):
    command = shutil.which("autograph", path=os.path.dirname(sys.executable))
    assert command, "pip install did not put the autograph command beside the python"
    out = tmp_path / "squeezenet.opt.pt"
    r = subprocess.run([command, "optimize", str(zoo / "squeezenet.pt"), "-o", str(out), "--method", "nimble"],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    original = torch.jit.load(str(zoo / "squeezenet.pt"))
    optimized = autograph.load(out)
    torch.manual_seed(0)
    x = torch.randn(1, 3, 224, 224)
    with torch.no_grad():
        _close(optimized(x), original(x))


def test_optimize_an_nn_module():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3, padding=1), torch.nn.ReLU(), torch.nn.Conv2d(8, 4, 1)).eval()
    x = torch.randn(1, 3, 16, 16)
    optimized, report = autograph.optimize(model, [x], method="nimble")
    assert isinstance(optimized, torch.jit.ScriptModule) and report["method"] == "nimble"
    with torch.no_grad():
        _close(optimized(x), model(x))


COMPILE_WITHOUT_IMPORT = """
import sys, torch
assert "autograph" in torch._dynamo.list_backends(), torch._dynamo.list_backends()
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.GELU(), torch.nn.Linear(32, 8)).eval()
compiled = torch.compile(model, backend="autograph", options={"method": "nimble"})
x = torch.randn(4, 16)
with torch.no_grad():
    err = ((compiled(x) - model(x)).abs().max() / model(x).abs().max()).item()
assert "autograph" in sys.modules, "the backend ran without loading the package"
print(err)
"""


def test_torch_compile_finds_the_backend_through_its_entry_point(tmp_path):
    r = subprocess.run([sys.executable, "-c", COMPILE_WITHOUT_IMPORT], capture_output=True, text=True, timeout=600,
                       cwd=tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    assert float(r.stdout.strip().splitlines()[-1]) <= 1e-4


def test_autograph_command_takes_a_pt2(tmp_path):
    """The installed command hands .pt2 (torch.export) models to the export path's commands."""
    command = shutil.which("autograph", path=os.path.dirname(sys.executable))
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3, padding=1), torch.nn.ReLU(), torch.nn.Conv2d(8, 4, 1)).eval()
    x = torch.randn(1, 3, 16, 16)
    torch.export.save(torch.export.export(model, (x,)), str(tmp_path / "m.pt2"))
    r = subprocess.run([command, "optimize", str(tmp_path / "m.pt2"), "-o", str(tmp_path / "o.pt2"), "--method",
                        "sequential", "--option", "inductor=false"], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    r = subprocess.run([command, "inspect", str(tmp_path / "o.pt2")], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0 and "optimized by autograph" in r.stdout, r.stdout + r.stderr
    with torch.no_grad():
        _close(torch.export.load(str(tmp_path / "o.pt2")).module()(x), model(x))
