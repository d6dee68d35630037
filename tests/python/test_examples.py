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
