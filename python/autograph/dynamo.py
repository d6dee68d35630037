"""torch.compile(model, backend="autograph"): each FX graph Dynamo captures is exported (torch.export,
no TorchScript) on the arguments of its first call with a new signature (shapes, dtypes, devices,
non-tensor values) and optimized by autograph.optimize for them — the export path, with parts compiled by
Inductor where they measure faster; later calls with that signature run the optimized program.
options={"ir": "torchscript"} traces the graph to TorchScript instead (the TorchScript path).

Inference only: parameters and buffers are frozen into the optimized graph at its first call, and a call
that needs autograd (grad enabled and an input that requires grad) runs the captured graph eagerly. A
graph that cannot be exported or optimized runs eagerly too, with one warning that says why; with
options={"strict": True} that is an error instead. Options go through torch.compile(model,
backend="autograph", options={...}) with the names of autograph.optimize.
"""
import warnings
from typing import Any, Callable, Dict, List, Tuple

import torch

from .api import optimize
from .errors import InputError
from .settings import check_options


def _is_weight(a: Any) -> bool:
    """A parameter or buffer of the user's module (Dynamo passes them as graph inputs, marked static)."""
    return isinstance(a, torch.nn.Parameter) or (isinstance(a, torch.Tensor) and
                                                 getattr(a, "_dynamo_static_input_type", None) is not None)


class _Frozen(torch.nn.Module):
    """The captured graph as a module of its tensor arguments alone: parameters and buffers become
    attributes (frozen into the optimized graph) and non-tensor arguments constants."""

    def __init__(self, gm: torch.nn.Module, args: Tuple[Any, ...], dynamic: List[int]):
        super().__init__()
        self.gm = gm
        self.dynamic = dynamic
        self.fixed = {i: a for i, a in enumerate(args) if i not in set(dynamic)}
        self.params = torch.nn.ParameterList([a for a in self.fixed.values() if isinstance(a, torch.nn.Parameter)])
        for k, (i, a) in enumerate((i, a) for i, a in self.fixed.items() if _is_weight(a) and not isinstance(a, torch.nn.Parameter)):
            self.register_buffer(f"buffer_{k}", a)
            self.fixed[i] = getattr(self, f"buffer_{k}")
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
        dynamic = [i for i, a in enumerate(args) if isinstance(a, torch.Tensor) and not _is_weight(a)]
        frozen = _Frozen(self.gm, args, dynamic).eval()
        tensors = [args[i] for i in dynamic]
        options = dict(self.options)
        ir = options.pop("ir", "export")
        strict = options.get("strict", False)
        try:
            with torch.no_grad():
                if ir == "torchscript":
                    traced = torch.jit.trace(frozen, tuple(tensors), strict=False, check_trace=False)
                    module, report = optimize(traced, tensors, **options)
                else:
                    exported = torch.export.export(frozen, tuple(tensors), strict=False)
                    optimized, report = optimize(exported, tensors, **options)
                    module = optimized.module()
        except Exception as e:  # noqa: BLE001 - the graph stays eager, the user is told why once
            if strict:
                raise
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
        return ("tensor", tuple(a.shape), a.dtype, a.device, id(a) if _is_weight(a) else None)
    return ("value", repr(a))


def autograph_backend(gm: torch.fx.GraphModule, example_inputs: List[Any], options: Dict[str, Any] = None, **_: Any):
    """The Dynamo backend (registered as "autograph" on `import autograph`, and through the
    torch_dynamo_backends entry point of the installed package). Bad options raise InputError here
    (torch.compile reports it) instead of leaving the graph eager."""
    options = dict(options or {})
    ir = options.get("ir", "export")
    if ir not in ("export", "torchscript"):
        raise InputError(f"option ir={ir!r}: the autograph backend takes ir='export' (default) or 'torchscript'")
    if not isinstance(options.get("strict", False), bool):
        raise InputError(f"option strict={options['strict']!r}: True or False")
    if "calibration" in options:
        raise InputError("calibration: the autograph backend takes none (torch.compile hands it the graphs Dynamo "
                         "captures, whose inputs are not the model's; a lowered graph is judged on its first call's "
                         "inputs): for calibration inputs, call autograph.optimize(model, inputs, precision=..., "
                         "calibration=[...])")
    check_options({k: v for k, v in options.items() if k not in ("ir", "strict")}, path=ir)
    return CompiledGraph(gm, options)


def register() -> None:
    """Registers the backend under the name "autograph" (idempotent)."""
    from torch._dynamo.backends.registry import _BACKENDS, register_backend
    if "autograph" not in _BACKENDS:
        register_backend(name="autograph")(autograph_backend)
