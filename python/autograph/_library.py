"""Finding and loading libautograph.so (the TorchScript ops and classes of autograph)."""
import os
from pathlib import Path

import torch

_loaded = False


def library_path() -> str:
    """$AUTOGRAPH_LIBRARY, else the library installed inside this package, else build/ of the checkout."""
    env = os.environ.get("AUTOGRAPH_LIBRARY")
    if env:
        return env
    here = Path(__file__).resolve().parent
    installed = here / "lib" / "libautograph.so"
    if installed.exists():
        return str(installed)
    return str(here.parents[1] / os.environ.get("AUTOGRAPH_BUILD_DIR", "build") / "libautograph.so")


def load_library() -> None:
    """Registers autograph's TorchScript ops and classes (idempotent)."""
    global _loaded
    if _loaded:
        return
    path = library_path()
    if not os.path.exists(path):
        raise FileNotFoundError(f"autograph: {path} not found; install the package (pip install .), build it "
                                "with scripts/build.sh, or point AUTOGRAPH_LIBRARY at libautograph.so")
    torch.ops.load_library(path)
    _loaded = True
