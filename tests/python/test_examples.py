"""examples/: each script runs on the CPU as a user would run it, on small sizes, and checks its own
outputs against eager PyTorch (it exits non-zero when they differ)."""
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
# The examples import autograph as a user does: the installed package (AUTOGRAPH_TEST_INSTALLED=1),
# else python/ of this checkout.
ENV = dict(os.environ) if os.environ.get("AUTOGRAPH_TEST_INSTALLED") == "1" else \
    {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT / "python"), os.environ.get("PYTHONPATH")]))}


@pytest.mark.parametrize("script,args", [
    ("optimize_torchvision.py", ["--model", "mobilenet_v3_small", "--size", "96", "--device", "cpu"]),
    ("compile_bert.py", ["--layers", "1", "--length", "16"]),
    ("save_and_reload.py", []),
    ("export_and_reload.py", []),
    ("dynamic_shapes.py", []),
])
def test_example_runs(script, args, tmp_path):
    if script == "save_and_reload.py":
        args = ["--out", str(tmp_path / "squeezenet_autograph.pt")]
    if script == "export_and_reload.py":
        args = ["--out", str(tmp_path / "inception_block_autograph.pt2")]
    if script == "dynamic_shapes.py":
        args = ["--out", str(tmp_path / "encoder_dynamic.pt2")]
    r = subprocess.run([sys.executable, str(ROOT / "examples" / script), *args], capture_output=True, text=True,
                       timeout=600, cwd=tmp_path, env=ENV)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "error" in r.stdout  # each prints its measured error


def test_aoti_package_runs_from_cpp(tmp_path):
    """examples/aoti_package: the optimized model as an AOTInductor package, run by the C++ program CMake
    built (AOTIModelPackageLoader after loading autograph's library), outputs checked against eager."""
    cli = os.environ.get("AUTOGRAPH_CLI")  # scripts/test.sh: the build directory's CLI
    build = Path(os.environ.get("AUTOGRAPH_BUILD_DIR") or (Path(cli).parent if cli else ROOT / "build"))
    runner = build / "run_aoti_package"
    if not runner.exists() and os.environ.get("AUTOGRAPH_TEST_INSTALLED") == "1":
        pytest.skip("the C++ example is built in the build directory, not installed with the package")
    assert runner.exists(), f"{runner} missing: build first (scripts/build.sh)"
    r = subprocess.run([sys.executable, str(ROOT / "examples" / "aoti_package" / "make_package.py"), "--out", str(tmp_path)],
                       capture_output=True, text=True, timeout=600, cwd=tmp_path, env=ENV)
    assert r.returncode == 0, r.stdout + r.stderr
    command = r.stdout.strip().splitlines()[-1].split()[1:]  # "run: run_aoti_package <args>"
    run = subprocess.run([str(runner), *command[1:]], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "max relative error" in run.stdout
