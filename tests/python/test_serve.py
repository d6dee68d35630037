"""Serving on an existing engine (Ray Serve): examples/serve/serve_model.py --quick starts a local
Ray cluster, deploys the autograph-optimized program on 2 Ray Serve replicas (each loads the .pt2 once),
sends requests from 3 client threads, checks every output against the unoptimized program, and stops
cleanly; in a subprocess with a time bound. Skipped where Ray is not installed (the GPU machines have no
network to install it; scripts/setup.sh installs it elsewhere)."""
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def test_ray_serve_replicas_answer_every_request_and_stop_cleanly(tmp_path):
    pytest.importorskip("ray.serve")
    env = dict(os.environ)
    if os.environ.get("AUTOGRAPH_TEST_INSTALLED") != "1":
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT / "python"), env.get("PYTHONPATH")]))
    table = tmp_path / "serve.md"
    r = subprocess.run([sys.executable, str(ROOT / "examples" / "serve" / "serve_model.py"), "--quick", "--cpus", "2",
                        "--artifacts", str(tmp_path), "--markdown", str(table)],
                       capture_output=True, text=True, timeout=420, env=env, cwd=tmp_path)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-4000:]
    assert "outputs checked" in r.stdout and "stopped cleanly" in r.stdout, r.stdout[-2000:]
    rows = [line for line in table.read_text().splitlines() if line.startswith("| mlp")]
    assert len(rows) == 1 and "| autograph | 2 |" in rows[0], rows
