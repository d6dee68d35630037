"""Python entry points of autograph: load the LibTorch extension and call its ops.

    import autograph
    autograph.load_library()                 # torch.ops.autograph.* and torch.classes.autograph.*
    stats = autograph.inspect(scripted_module, [torch.randn(1, 3, 224, 224)])

The library is found through $AUTOGRAPH_LIBRARY, else build/libautograph.so of this checkout.
"""
import json
import os
import tempfile
from pathlib import Path
from typing import Sequence, Union

import torch

__all__ = ["library_path", "load_library", "inspect"]

_loaded = False


def library_path() -> str:
    env = os.environ.get("AUTOGRAPH_LIBRARY")
    if env:
        return env
    root = Path(__file__).resolve().parents[2]
    return str(root / os.environ.get("AUTOGRAPH_BUILD_DIR", "build") / "libautograph.so")


def load_library() -> None:
    """Registers autograph's TorchScript ops and classes (idempotent)."""
    global _loaded
    if _loaded:
        return
    path = library_path()
    if not os.path.exists(path):
        raise FileNotFoundError(f"autograph: {path} not found; build it with scripts/build.sh "
                                "or point AUTOGRAPH_LIBRARY at libautograph.so")
    torch.ops.load_library(path)
    _loaded = True


def inspect(model: Union[str, os.PathLike, torch.jit.ScriptModule],
            example_inputs: Sequence[torch.Tensor]) -> dict:
    """Operator-graph statistics (the keys of `autograph inspect --json`) of a TorchScript module
    or of a saved one, on the given example inputs."""
    load_library()
    if isinstance(model, (str, os.PathLike)):
        return json.loads(torch.ops.autograph.inspect(os.fspath(model), list(example_inputs)))
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "model.pt")
        torch.jit.save(model, path)
        return json.loads(torch.ops.autograph.inspect(path, list(example_inputs)))
