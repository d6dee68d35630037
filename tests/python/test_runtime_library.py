"""libautograph_runtime.so: what a serving process needs to load and run optimized models, without the
planner. examples/runtime_host/serve_host links LibTorch alone and loads models as a server does.
The runtime comes in by LD_PRELOAD, as with Triton's pytorch_libtorch backend."""
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "python"))
import autograph  # noqa: E402

pytestmark = pytest.mark.skipif(os.environ.get("AUTOGRAPH_TEST_INSTALLED") == "1",
                                reason="serve_host is built in the build directory, not installed")


def _build() -> Path:
    cli = os.environ.get("AUTOGRAPH_CLI")
    return Path(os.environ.get("AUTOGRAPH_BUILD_DIR") or (Path(cli).parent if cli else ROOT / "build"))


def _needed(library: Path) -> list:
    out = subprocess.run(["readelf", "-d", str(library)], capture_output=True, text=True, check=True).stdout
    return [line.split("[")[1].rstrip("]") for line in out.splitlines() if "(NEEDED)" in line]


def _host(model: Path, folder: Path, shape, preload):
    """serve_host on `model`; `preload`: True (the runtime), False, or an LD_PRELOAD value."""
    env = dict(os.environ)
    env.pop("LD_PRELOAD", None)
    if preload:
        env["LD_PRELOAD"] = preload if isinstance(preload, str) else autograph.runtime_library_path()
    dims = [str(d) for d in shape]
    return subprocess.run([str(_build() / "serve_host"), str(model), str(folder / "input.bin"),
                           str(folder / "expected.bin"), *dims], capture_output=True, text=True, timeout=300, env=env)


def test_runtime_library_needs_neither_the_planner_nor_glpk_nor_nvrtc():
    runtime = Path(autograph.runtime_library_path())
    assert runtime.exists(), f"{runtime} missing: build first (scripts/build.sh)"
    needed = _needed(runtime)
    assert any(n.startswith("libtorch") for n in needed), needed
    # NVRTC is loaded when a stitched CUDA kernel is first compiled (csrc/ops/nvrtc_library.h).
    assert not [n for n in needed if "glpk" in n or "nvrtc" in n or n == "libautograph.so"], needed
    # The planning library builds on the runtime.
    assert "libautograph_runtime.so" in _needed(Path(autograph.library_path()))


def test_a_process_without_autograph_serves_an_optimized_torchscript_model(cli, zoo, tmp_path):
    out = tmp_path / "squeezenet_autograph.pt"
    r = subprocess.run([cli, "optimize", str(zoo / "squeezenet.pt"), "-o", str(out), "--json"],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    torch.manual_seed(0)
    x = torch.randn(1, 3, 224, 224)
    with torch.no_grad():
        want = torch.jit.load(str(zoo / "squeezenet.pt"))(x)
    x.numpy().tofile(tmp_path / "input.bin")
    want.numpy().tofile(tmp_path / "expected.bin")

    alone = _host(out, tmp_path, x.shape, preload=False)
    assert alone.returncode == 2, alone.stdout + alone.stderr
    assert "autograph" in alone.stderr, alone.stderr  # what is missing: autograph's ops or classes
    served = _host(out, tmp_path, x.shape, preload=True)
    assert served.returncode == 0, served.stdout + served.stderr
    assert "max relative error" in served.stdout


def test_a_process_without_autograph_serves_an_optimized_aoti_package(tmp_path):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT / "python"), os.environ.get("PYTHONPATH")]))}
    r = subprocess.run([sys.executable, str(ROOT / "examples" / "aoti_package" / "make_package.py"), "--out", str(tmp_path)],
                       capture_output=True, text=True, timeout=600, cwd=tmp_path, env=env)
    assert r.returncode == 0, r.stdout + r.stderr
    run = r.stdout.strip().splitlines()[-1].split()  # "run: LD_PRELOAD=... serve_host PT2 IN OUT dims..."
    preload = run[1].removeprefix("LD_PRELOAD=")
    # The runtime, and OpenVINO's runner where the kept program has an OpenVINO part.
    assert preload.split(":")[0] == autograph.runtime_library_path(), run
    served = _host(tmp_path / "model.pt2", tmp_path, run[6:], preload=preload)
    assert served.returncode == 0, served.stdout + served.stderr
    assert "max relative error" in served.stdout
