"""Finding and loading libautograph.so (the TorchScript ops and classes of autograph) and the CLI."""
import importlib
import importlib.machinery
import os
from pathlib import Path
from typing import Dict, Optional

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
    for runner in _RUNNERS:
        _load_runner(runner)


# The compilers' runners of their parts, each a library of its own beside libautograph.so that links the
# compiler and installs its runner when it loads (the runtime never links a compiler): the library's
# name, the Python package that ships the compiler's own libraries, whether importing it loads them
# first (OpenVINO's; ONNX Runtime's runner opens the package's library itself when a part first runs,
# so the package is looked for, never imported), and what to install.
_RUNNERS = {
    "openvino": ("libautograph_openvino.so", "openvino", True, "pip install openvino"),
    "onnxruntime": ("libautograph_onnxruntime.so", "onnxruntime", False, "pip install onnxruntime"),
}
_missing: Dict[str, str] = {name: "autograph's library is not loaded yet" for name in _RUNNERS}


def runner_library_path(runner: str) -> str:
    """The runner library of compiler `runner` ("openvino", "onnxruntime"), beside library_path() (built
    where the compiler's package was found beside torch)."""
    return str(Path(library_path()).with_name(_RUNNERS[runner][0]))


def openvino_library_path() -> str:
    """libautograph_openvino.so: OpenVINO's runner of autograph::run_openvino_part."""
    return runner_library_path("openvino")


def _load_runner(runner: str) -> None:
    """Loads the runner library of `runner` when it (and its Python package, where it needs one) is here;
    else records why not (runner_missing), and programs with its parts say so when they run."""
    _, package, import_first, install = _RUNNERS[runner]
    path = runner_library_path(runner)
    if not os.path.exists(path):
        _missing[runner] = f"{path} was not built ({install} beside torch, then build autograph again)"
        return
    try:
        if import_first:
            importlib.import_module(package)  # loads the compiler's own libraries, which the runner links
        elif importlib.machinery.PathFinder.find_spec(package) is None:  # its files, not an import
            raise ImportError(f"no module named '{package}'")
    except ImportError as e:
        _missing[runner] = f"the {package} package is not installed ({e}): {install}"
        return
    try:
        torch.ops.load_library(path)
    except OSError as e:
        _missing[runner] = f"{path} does not load: {e} ({install})"
        return
    _missing.pop(runner, None)


def runner_missing(runner: str) -> Optional[str]:
    """None when compiler `runner`'s parts can be built and run in this process, else why not."""
    load_library()
    return _missing.get(runner)


def openvino_missing() -> Optional[str]:
    """None when OpenVINO parts can be built and run in this process, else why not."""
    return runner_missing("openvino")
