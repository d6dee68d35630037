"""torch.compile(model, backend="autograph"): each FX graph Dynamo captures is traced to TorchScript on
the arguments of its first call with a new signature (shapes, dtypes, devices, non-tensor values) and
optimized by autograph.optimize for them; later calls with that signature run the optimized module.

Inference only: parameters are frozen into the optimized graph at its first call, and a call that
needs autograd (grad enabled and an input that requires grad) runs the captured graph eagerly. A graph
that cannot be traced or optimized runs eagerly too, with one warning that says why. Options go through
torch.compile(model, backend="autograph", options={...}) with the names of autograph.optimize.
"""
import warnings
from typing import Any, Callable, Dict, List, Tuple

import torch

from .api import optimize


class _Frozen(torch.nn.Module):
    """The captured graph as a module of its tensor arguments alone: parameters become attributes
    (frozen into the optimized graph) and non-tensor arguments constants."""

    def __init__(self, gm: torch.nn.Module, args: Tuple[Any, ...], dynamic: List[int]):
        super().__init__()
        self.gm = gm
        self.dynamic = dynamic
        self.fixed = {i: a for i, a in enumerate(args) if i not in set(dynamic)}
        self.params = torch.nn.ParameterList([a for a in self.fixed.values() if isinstance(a, torch.nn.Parameter)])
        self.size = len(args)
        self.returns_list = False

    def forward(self, *tensors):
        args = [None] * self.size
        for i, a in self.fixed.items():
            args[i] = a
        for i, t in zip(self.dynamic, tensors):
            args[i] = t
        out = self.gm(*args)
        self.returns_list = isinstance(out, list)
        return tuple(out) if isinstance(out, list) else out


class CompiledGraph:
    """What the backend returns for one FX graph: an optimized module per call signature."""

    def __init__(self, gm: torch.fx.GraphModule, options: Dict[str, Any]):
        self.gm = gm
        self.options = dict(options)
        self.compiled: Dict[Tuple, Callable] = {}
        self.warned = set()

    def __call__(self, *args):
        if torch.is_grad_enabled() and any(isinstance(a, torch.Tensor) and a.requires_grad and not isinstance(a, torch.nn.Parameter)
                                           for a in args):
            self._warn("autograd", "the autograph backend optimizes inference; a call that needs autograd runs "
                       "the captured graph eagerly (call under torch.no_grad() or torch.inference_mode())")
            return self.gm(*args)
        key = tuple(_signature(a) for a in args)
        run = self.compiled.get(key)
        if run is None:
            run = self.compiled[key] = self._compile(args)
        return run(*args)

    def _compile(self, args: Tuple[Any, ...]) -> Callable:
        dynamic = [i for i, a in enumerate(args) if isinstance(a, torch.Tensor) and not isinstance(a, torch.nn.Parameter)]
        frozen = _Frozen(self.gm, args, dynamic).eval()
        tensors = [args[i] for i in dynamic]
        try:
            with torch.no_grad():
                traced = torch.jit.trace(frozen, tuple(tensors), strict=False, check_trace=False)
            module, report = optimize(traced, tensors, **self.options)
        except Exception as e:  # noqa: BLE001 - the graph stays eager, the user is told why once
            self._warn(f"compile:{type(e).__name__}", f"the autograph backend runs a captured graph eagerly: {e}")
            return self.gm
        if report.get("fallback"):
            self._warn(f"fallback:{report['fallback']}", f"the autograph backend runs a captured graph as plain "
                       f"TorchScript: {report['fallback']}")
        as_list = frozen.returns_list

        def run(*call_args):
            with torch.no_grad():
                out = module(*[call_args[i] for i in dynamic])
            return list(out) if as_list else out

        return run

    def _warn(self, key: str, message: str) -> None:
        if key not in self.warned:
            self.warned.add(key)
            warnings.warn(message, stacklevel=3)


def _signature(a: Any):
    if isinstance(a, torch.Tensor):
        return ("tensor", tuple(a.shape), a.dtype, a.device, id(a) if isinstance(a, torch.nn.Parameter) else None)
    return ("value", repr(a))


def autograph_backend(gm: torch.fx.GraphModule, example_inputs: List[Any], options: Dict[str, Any] = None, **_: Any):
    """The Dynamo backend (registered as "autograph" on `import autograph`, and through the
    torch_dynamo_backends entry point of the installed package)."""
    return CompiledGraph(gm, options or {})


def register() -> None:
    """Registers the backend under the name "autograph" (idempotent)."""
    from torch._dynamo.backends.registry import _BACKENDS, register_backend
    if "autograph" not in _BACKENDS:
        register_backend(name="autograph")(autograph_backend)
