"""Finding and loading libautograph.so (the TorchScript ops and classes of autograph) and the CLI."""
import importlib
import os
from pathlib import Path
from typing import Optional

import torch

_loaded = False
_HERE = Path(__file__).resolve().parent


def _installed(relative: str) -> Optional[Path]:
    """A file that `pip install` put inside the package (autograph/lib/..., autograph/bin/...).

    Beside this file after a normal install; after `pip install -e .` the Python files are the
    checkout's and the built files sit in site-packages, where the distribution's record names them.
    """
    beside = _HERE / relative
    if beside.exists():
        return beside
    try:
        from importlib import metadata
        dist = metadata.distribution("autograph")
    except Exception:  # not installed: a checkout on sys.path
        return None
    for f in dist.files or []:
        if f.as_posix() == f"autograph/{relative}":
            path = Path(dist.locate_file(f))
            if path.exists():
                return path
    return None


def _checkout_build(name: str) -> Path:
    return _HERE.parents[1] / os.environ.get("AUTOGRAPH_BUILD_DIR", "build") / name


def _find(env: str, relative: str) -> str:
    """$env, else the file installed with this package, else build/ of the checkout."""
    if os.environ.get(env):
        return os.environ[env]
    installed = _installed(relative)
    return str(installed if installed else _checkout_build(Path(relative).name))


def library_path() -> str:
    """$AUTOGRAPH_LIBRARY, else the library installed with this package, else build/ of the checkout."""
    return _find("AUTOGRAPH_LIBRARY", "lib/libautograph.so")


def runtime_library_path() -> str:
    """libautograph_runtime.so, beside library_path(): what a process needs to load and run optimized
    models (its operators and classes) without the planner, e.g. a server started with LD_PRELOAD."""
    return str(Path(library_path()).with_name("libautograph_runtime.so"))


def cli_path() -> str:
    """$AUTOGRAPH_CLI, else the `autograph` executable installed with this package, else build/."""
    return _find("AUTOGRAPH_CLI", "bin/autograph")


def load_library() -> None:
    """Registers autograph's TorchScript ops and classes (idempotent)."""
    global _loaded
    if _loaded:
        return
    path = library_path()
    if not os.path.exists(path):
        raise FileNotFoundError(f"autograph: {path} not found; install the package (pip install --no-build-isolation .), "
                                "build it with scripts/build.sh, or point AUTOGRAPH_LIBRARY at libautograph.so")
    torch.ops.load_library(path)
    _loaded = True
    _load_openvino_runner()


_openvino_missing: Optional[str] = "autograph's library is not loaded yet"


def openvino_library_path() -> str:
    """libautograph_openvino.so, beside library_path(): OpenVINO's runner of autograph::run_openvino_part
    (built where the openvino package was found beside torch)."""
    return str(Path(library_path()).with_name("libautograph_openvino.so"))


def _load_openvino_runner() -> None:
    """Loads libautograph_openvino.so when it and the openvino package are here; else records why not
    (openvino_missing), and programs with OpenVINO parts say so when they run."""
    global _openvino_missing
    path = openvino_library_path()
    if not os.path.exists(path):
        _openvino_missing = f"{path} was not built (pip install openvino beside torch, then build autograph again)"
        return
    try:
        importlib.import_module("openvino")  # loads OpenVINO's own libraries, which the runner links
    except ImportError as e:
        _openvino_missing = f"the openvino package is not installed ({e}): pip install openvino"
        return
    try:
        torch.ops.load_library(path)
    except OSError as e:
        _openvino_missing = f"{path} does not load: {e}"
        return
    _openvino_missing = None


def openvino_missing() -> Optional[str]:
    """None when OpenVINO parts can be built and run in this process, else why not."""
    load_library()
    return _openvino_missing

