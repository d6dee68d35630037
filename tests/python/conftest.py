"""Shared pytest fixtures: paths of the built CLI, library and model zoo (scripts/test.sh exports them)."""
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
# AUTOGRAPH_TEST_INSTALLED=1 (scripts/test.sh, after `pip install .`): the tests import the installed
# package, not python/ of the checkout, and find its library and CLI without environment variables.
INSTALLED = os.environ.get("AUTOGRAPH_TEST_INSTALLED") == "1"
for p in (ROOT,) if INSTALLED else (ROOT, ROOT / "python"):
    if str(p) not in sys.path:
        sys.path.insert(0, str(p))
# The installed package's own checks run only against an installed package.
collect_ignore = [] if INSTALLED else ["test_installed_package.py"]


def _build_dir() -> Path:
    return Path(os.environ.get("AUTOGRAPH_BUILD_DIR", ROOT / "build"))


@pytest.fixture(scope="session")
def cli() -> str:
    if INSTALLED:
        import autograph._library
        path = autograph._library.cli_path()
    else:
        path = os.environ.get("AUTOGRAPH_CLI", str(_build_dir() / "autograph"))
    assert os.path.exists(path), f"{path} missing: build first (scripts/build.sh)"
    return path


@pytest.fixture(scope="session")
def zoo() -> Path:
    path = Path(os.environ.get("AUTOGRAPH_ZOO_DIR", ROOT / "models" / "zoo"))
    assert (path / "squeezenet.pt").exists(), f"{path} has no zoo: run models/export.py --out {path}"
    return path


@pytest.fixture
def fresh_python():
    """Runs a script in a fresh Python process that imports this checkout's package (what a saved model
    meets when it is loaded elsewhere) and checks that it printed "ok" last."""
    def run(script: str, timeout: int = 300) -> None:
        env = dict(os.environ, PYTHONPATH=str(ROOT / "python"))
        r = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=timeout, env=env)
        assert r.returncode == 0 and r.stdout.strip().endswith("ok"), r.stderr[-2000:]
    return run


@pytest.fixture
def offers_bf16(monkeypatch):
    """OpenVINO offers its bf16 candidates as on a CPU that computes bf16, for a test whose subject is what
    the contest does with them (timings stood in): on a CPU without AVX-512 they would compute float32."""
    from autograph.export.compilers import openvino
    monkeypatch.setattr(openvino, "cpu_has_bf16", lambda: True)
