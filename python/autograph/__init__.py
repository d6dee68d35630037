"""autograph from Python: optimize a model for inference, or compile it with torch.compile.

    import autograph, torch, torchvision
    model = torchvision.models.resnet50().eval()
    x = torch.randn(1, 3, 224, 224)
    optimized, report = autograph.optimize(model, [x])      # a TorchScript module and the plan's report
    torch.jit.save(optimized, "resnet50_opt.pt"); again = autograph.load("resnet50_opt.pt")
    ep_opt, report = autograph.optimize(torch.export.export(model, (x,)))  # the export path: an ExportedProgram
    torch.export.save(ep_opt, "resnet50_opt.pt2")          # torch.export.load after `import autograph`
    compiled = torch.compile(model, backend="autograph")     # Dynamo backend, registered on import

The LibTorch extension is found in the package (pip install .), through $AUTOGRAPH_LIBRARY, or in
build/ of a checkout.
"""
import json
import os
import tempfile
from typing import Sequence, Union

import torch

from ._library import library_path, load_library, openvino_library_path, runner_library_path, runtime_library_path
from .api import load, optimize, substitute
from .errors import Error, InputError, UnsupportedModelError
from .labelled import labelled
from .settings import Settings, option_table

__all__ = ["optimize", "substitute", "inspect", "load", "library_path", "runtime_library_path", "openvino_library_path", "runner_library_path", "load_library", "Error", "InputError",
           "UnsupportedModelError", "Settings", "option_table", "labelled"]


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


def _register_dynamo_backend() -> None:
    try:
        from . import dynamo
        dynamo.register()
    except ImportError:  # a torch without Dynamo: optimize and the rest still work
        pass


_register_dynamo_backend()


def _register_export_ops() -> None:
    """autograph::execute's fake kernel, so that torch.export.load and AOTInductor can trace programs
    that call it. Without the built library (a checkout not built yet) nothing is registered here; the
    first call that needs it says where the library was looked for."""
    try:
        from .export import register_fake
        register_fake()
    except OSError:  # not built yet, or built for another torch: the first call that needs it says so
        pass


_register_export_ops()
