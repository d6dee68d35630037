"""`autograph optimize` flags for the other path: refused with one error line before any work, not ignored
(the C++ CLI on a TorchScript .pt model, the export path's command on a .pt2 program)."""
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parents[2]
ENV = dict(os.environ) if os.environ.get("AUTOGRAPH_TEST_INSTALLED") == "1" else \
    {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT / "python"), os.environ.get("PYTHONPATH")]))}


def _error_line(r) -> str:
    assert r.returncode == 2, (r.returncode, r.stderr)
    return r.stderr.strip().splitlines()[-1]


@pytest.mark.parametrize("flag", ["--no-openvino", "--openvino", "--no-inductor", "--inductor"])
def test_export_path_flags_are_refused_on_a_torchscript_model(cli, zoo, tmp_path, flag):
    out = tmp_path / "o.pt"
    r = subprocess.run([cli, "optimize", str(zoo / "squeezenet.pt"), "-o", str(out), "--method", "sequential", flag],
                       capture_output=True, text=True, timeout=120)
    name = flag.removeprefix("--").removeprefix("no-")
    line = _error_line(r)
    assert line.startswith(f"autograph: error: option '{name}' applies to the export path (\"export path"), line
    assert "not the TorchScript path this model takes: drop it here" in line and ".pt2" in line, line
    assert len(r.stderr.strip().splitlines()) == 1 and r.stdout == "" and not out.exists()


def test_torchscript_path_flags_are_refused_on_a_pt2(tmp_path):
    program = tmp_path / "linear.pt2"
    x = torch.randn(2, 8)
    torch.export.save(torch.export.export(torch.nn.Linear(8, 8).eval(), (x,)), str(program))
    for flags, name in ((["--no-stitch"], "stitch"), (["--substitutions"], "substitutions"),
                        (["--plan-new-shapes", "0"], "plan_new_shapes")):
        r = subprocess.run([sys.executable, "-m", "autograph.export_cli", "optimize", str(program), "-o",
                            str(tmp_path / "o.pt2"), "--method", "sequential", *flags],
                           capture_output=True, text=True, timeout=300, env=ENV)
        line = _error_line(r)
        assert line.startswith(f"autograph: error: option '{name}' applies to the TorchScript path"), line
        assert "not the export path this model takes: drop it here" in line, line
    assert not (tmp_path / "o.pt2").exists()
