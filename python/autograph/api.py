"""autograph.optimize / substitute / load: a model in, an optimized TorchScript module and its report out."""
import contextlib
import json
import os
from typing import Any, Dict, List, Optional, Sequence, Tuple, Union

import torch

from ._library import load_library
from .errors import Error, InputError, UnsupportedModelError, translate
from .labelled import check_labels
from .settings import Settings, check_options, check_options_apply

Model = Union[torch.nn.Module, torch.jit.ScriptModule, str, "os.PathLike[str]"]


def optimize(model: Model, example_inputs: Union[Sequence[Any], torch.Tensor, None] = None, *,
             method: Optional[str] = None, device: Optional[Union[str, torch.device]] = None, ir: Optional[str] = None,
             dynamic_shapes: Any = None, settings: Optional[Settings] = None, strict: bool = False,
             calibration: Optional[Sequence[Any]] = None, **options: Any):
    """Optimizes `model` for inference on `example_inputs` (one per forward() argument: tensors, or tuples,
    lists and dicts of them, numbers, bools, None).

    The export path: `model` a torch.export.ExportedProgram (example inputs optional: the program's
    own by default), or an nn.Module with ir="export" (exported here with torch.export.export, strict=False,
    `dynamic_shapes` passed on). Returns an optimized ExportedProgram — save it with torch.export.save,
    load it with torch.export.load after `import autograph` — and the report. Its graph calls
    autograph::execute; no TorchScript is involved. The plan's kernels come from Inductor where that
    measures faster, and from OpenVINO and ONNX Runtime on CPU, part by part where a mix measures faster
    (options inductor, openvino, onnxruntime; report["contest"] says what was compiled, timed and kept); no
    TorchScript substitutions or stitching; the search's cost models as on the TorchScript path (cost=
    "measured" runs the exported graph's stages on the device), on-board verification measures.
    A program with dynamic dims is planned at the example's shapes and runs other shapes in its range
    on its own graph (report["dynamic_shapes"]). `calibration`: more inputs (a list of input tuples with
    the example's dtypes and shapes) on which a candidate computing below float32 (option precision)
    must meet option tolerance too.

    The TorchScript path (ir=None or "torchscript"):
    `model` is an nn.Module (traced in eval mode with the example inputs; scripted when tracing fails), a
    ScriptModule, or the path of a saved one. With precision="tf32" on CUDA the planned program competes
    once more with its float32 matmuls and convolutions in TF32; with "bf16" (CUDA, a CPU with bf16
    instructions) or "fp16" (CUDA) the graph is planned once more with its matmuls and convolutions
    lowered (all of them, or the runs of them within option tolerance); either is kept where its outputs
    stay within option tolerance, on the example and the `calibration` inputs, and it measures faster
    (report["precision"]).

    Options: `settings` (an autograph.Settings) and/or the same names as keywords (they win), among them
    `method` (the scheduler: autograph; the baselines sequential, greedy, nimble, ios) and `device` (where
    to plan and run; default: the example inputs' device). Every option is in the README's option table
    (autograph.option_table() is its declaration). A bad option raises InputError before any work, and so
    does one given for the other path alone ("applies"; e.g. openvino here, stitch on the export path).
    strict=True raises where autograph would otherwise fall back quietly: a model the TorchScript path
    cannot take apart (report["fallback"]), a compiled candidate or the every-shape package that failed
    (report["contest"]["errors"], report["dynamic_shapes"]["error"]), or, with option precision below
    fp32, no lowered candidate within option tolerance (report["precision"], on either path); not an
    optional compiler that is not installed (report["contest"]["not_available"] names it).
    report["inductor"] is report["contest"] under its former name, kept readable for a while.

    Returns the optimized ScriptModule (save it with torch.jit.save, load it with autograph.load) and the
    report as a dict (the keys of `autograph optimize --json`). report["timeline"] is the kept schedule in
    time (stages, and each stream's operators with their predicted start and duration), and
    report["timeline"]["svg"] the same drawn as an SVG picture (what `autograph optimize --timeline`
    writes). A model autograph cannot take apart comes back unchanged with report["fallback"] saying
    why (and report["timeline"] None).
    """
    if ir not in (None, "torchscript", "export"):
        raise InputError(f"unknown ir '{ir}': use 'export' (torch.export) or 'torchscript'")
    if settings is not None and not isinstance(settings, Settings):
        raise InputError(f"settings must be an autograph.Settings, got {type(settings).__name__}")
    given = dict(options, **{k: v for k, v in (("method", method), ("device", device)) if v is not None})
    if isinstance(given.get("device"), torch.device):
        given["device"] = str(given["device"])
    resolved = Settings.of(settings, **given)  # checked before any tracing, export or compile
    method, device, options = resolved.method, resolved.device, resolved.options()
    options.pop("method", None)
    options.pop("device", None)
    from torch.export import ExportedProgram
    path = "export" if isinstance(model, ExportedProgram) or ir == "export" else "torchscript"
    check_options_apply(list(given) + list(settings.options() if settings is not None else ()), path)  # set
    check_options({"accuracy": resolved.accuracy}, path)  # a function: the export path's alone
    calls = _calibration_on_torchscript(calibration, example_inputs) if path == "torchscript" else []
    if path == "export":
        optimized, report = _optimized_on_the_export_path(model, example_inputs, dynamic_shapes, method, device,
                                                          options, calibration)
        if strict:
            _raise_on_fallback(report)
        return optimized, report
    if example_inputs is None:
        raise InputError("example_inputs are required: one per forward() argument")
    module, report = _run("optimize", model, example_inputs, method, device, options, calls)
    if strict:
        _raise_on_fallback(report)
    if report.get("timeline"):
        title = f"{_name_of(model)}: {report['method']} schedule on {report['device']}"
        report["timeline"]["svg"] = torch.ops.autograph.timeline_svg(json.dumps(report["timeline"]), title)
    return module, report


def _calibration_on_torchscript(calibration: Optional[Sequence[Any]], example_inputs: Any) -> List[List[Any]]:
    """The calibration inputs for the TorchScript path, each a list of a call's arguments, checked against
    the example inputs (export.calibration.calibration_sets) before any tracing: InputError where one
    differs from them in structure, dtype or shape."""
    if calibration is None:
        return []
    from .export.calibration import calibration_sets
    if example_inputs is None:
        raise InputError("example_inputs are required: one per forward() argument")
    example = (example_inputs,) if isinstance(example_inputs, torch.Tensor) else tuple(example_inputs)
    calibration_sets(calibration, example, None)
    return [[entry] if isinstance(entry, torch.Tensor) else list(entry) for entry in calibration]


def _optimized_on_the_export_path(model: Model, example_inputs: Any, dynamic_shapes: Any, method: str,
                                  device: Optional[str], options: Dict[str, Any], calibration: Optional[Sequence[Any]]):
    """optimize's export path: `model` exported where it is an nn.Module (after the calibration inputs are
    checked against the example's), then optimize_exported."""
    from torch.export import ExportedProgram
    from .export import optimize_exported
    from .export.calibration import calibration_sets, check_enough
    kwargs = None
    if isinstance(example_inputs, dict):
        kwargs, example_inputs = example_inputs, ()
    elif isinstance(example_inputs, torch.Tensor):
        example_inputs = (example_inputs,)
    examples = model.example_inputs if isinstance(model, ExportedProgram) and example_inputs is None else None
    checks = calibration_sets(calibration, *(examples or (example_inputs or (), kwargs)))  # before any work
    check_enough(options.get("precision", "fp32"), len(checks))
    check_labels(options.get("accuracy"), len(checks))
    if not isinstance(model, ExportedProgram):
        model = export_module(model, example_inputs, dynamic_shapes)
    elif dynamic_shapes is not None:
        raise InputError("dynamic_shapes applies when autograph exports the model (ir='export' on an nn.Module); "
                         "this program is exported already")
    return optimize_exported(model, method=method, device=device, options=options,
                             example_inputs=None if example_inputs is None else tuple(example_inputs),
                             example_kwargs=kwargs, calibration=checks)


def substitute(model: Model, example_inputs: Union[Sequence[Any], torch.Tensor], *,
               device: Optional[Union[str, torch.device]] = None, **options: Any) -> Tuple[torch.jit.ScriptModule, Dict[str, Any]]:
    """The graph substitutions alone (merged linears, regrouped convolutions, conv+relu folds, fused
    attention), run by TorchScript's own executor: the "TASO + JIT" baseline. Arguments as optimize."""
    check_options(options, path="torchscript")  # before any tracing
    return _run("substitute", model, example_inputs, None, device, options)


def _raise_on_fallback(report: Dict[str, Any]) -> None:
    """strict=True: what optimize would have fallen back from, as an error."""
    if report.get("fallback"):
        raise UnsupportedModelError(f"strict: the model was not optimized: {report['fallback']}")
    lowered = report.get("precision") or {}  # the TorchScript path's programs below fp32 (ChoosePrecision)
    note = lowered.get("note") or ""
    if lowered.get("kept") == "fp32" and ("beyond the tolerance" in note or "could not be made" in note):
        raise Error(f"strict: no program in {lowered['asked']} met the tolerance {lowered['tolerance']:g}: {note} "
                    f"(error {lowered['error']}) (a larger tolerance, or precision fp32)")
    contest = report.get("contest") or {}
    # An optional compiler that is not installed (OpenVINO) is not a failure: the report says it is missing.
    errors = {k: v for k, v in (contest.get("errors") or {}).items() if k not in contest.get("not_available", ())}
    precision = contest.get("precision") or {}
    if precision.get("lowered") and not precision.get("met"):
        raise Error(f"strict: no candidate in {precision['asked']} met the tolerance {precision['tolerance']:g}: "
                    + "; ".join(f"{k}: {errors[k]}" for k in precision["lowered"] if k in errors)
                    + " (a larger tolerance, or precision fp32)")
    errors = {k: v for k, v in errors.items() if k not in precision.get("lowered", ())}
    if errors:
        raise Error("strict: compiled candidates failed: " + "; ".join(f"{k}: {v}" for k, v in errors.items()))
    dynamic = report.get("dynamic_shapes") or {}
    if dynamic.get("error"):
        raise Error(f"strict: the program for other shapes failed: {dynamic['error']}")


def load(path: Union[str, "os.PathLike[str]"], map_location: Optional[Union[str, torch.device]] = None) -> torch.jit.ScriptModule:
    """Loads a module that autograph.optimize (or the CLI) wrote, after registering autograph's ops."""
    load_library()
    return torch.jit.load(os.fspath(path), map_location=map_location)


def export_module(model: torch.nn.Module, example_inputs: Sequence[Any], dynamic_shapes: Any = None):
    """torch.export.export of `model` in eval mode (strict=False), with a clear error when export cannot take it."""
    if not isinstance(model, torch.nn.Module) or isinstance(model, torch.jit.ScriptModule):
        raise UnsupportedModelError(f"ir='export' takes an nn.Module, got {type(model).__name__}")
    if example_inputs is None:
        raise InputError("ir='export' needs example inputs to export the model with")
    with _eval_mode(model):
        try:
            return torch.export.export(model, tuple(example_inputs), dynamic_shapes=dynamic_shapes, strict=False)
        except Exception as e:  # noqa: BLE001 - export's own message says what it could not take
            raise UnsupportedModelError(f"torch.export could not export {type(model).__name__}: {_first_line(e)}. "
                                        "Models with data-dependent control flow go through the TorchScript path: "
                                        "autograph.optimize(model, inputs) without ir='export'") from None


def to_script_module(model: Model, example_inputs: Sequence[Any]) -> torch.jit.ScriptModule:
    """A ScriptModule for `model`: as it is, loaded from a path, or traced (else scripted) from an nn.Module."""
    if isinstance(model, (str, os.PathLike)):
        return load(model)
    if isinstance(model, torch.jit.ScriptModule):
        return model
    if not isinstance(model, torch.nn.Module):
        raise UnsupportedModelError(f"expected an nn.Module, a ScriptModule or a path, got {type(model).__name__}")
    errors = []
    with _eval_mode(model), torch.no_grad():
        try:
            return torch.jit.trace(model, tuple(example_inputs), strict=False, check_trace=False)
        except Exception as e:  # noqa: BLE001 - any tracer failure: try scripting
            errors.append(f"tracing failed: {_first_line(e)}")
        try:
            return torch.jit.script(model)
        except Exception as e:  # noqa: BLE001
            errors.append(f"scripting failed: {_first_line(e)}")
    raise UnsupportedModelError(f"cannot turn {type(model).__name__} into TorchScript: " + "; ".join(errors) +
                                ". Pass a ScriptModule you made yourself, or make forward() traceable")


def _run(what: str, model: Model, example_inputs, method: Optional[str], device, options: Dict[str, Any],
         calibration: Sequence[List[Any]] = ()):
    """`options` checked already (by the caller, before any tracing); `calibration`: optimize's, each a
    list of a call's arguments."""
    inputs = [example_inputs] if isinstance(example_inputs, torch.Tensor) else list(example_inputs)
    module = to_script_module(model, inputs)
    settings = dict(options)
    if method is not None:
        settings["method"] = method
    settings["device"] = str(torch.device(device)) if device is not None else _device_of(inputs)
    load_library()
    op = getattr(torch.ops.autograph, what)
    try:
        result, report = op(module, inputs, json.dumps(settings), list(calibration))
    except (RuntimeError, ValueError) as e:
        raise translate(e) from None
    if not isinstance(result, torch.jit.ScriptModule):
        result = torch.jit._recursive.wrap_cpp_module(result)
    return result, json.loads(report)


def _name_of(model: Model) -> str:
    if isinstance(model, (str, os.PathLike)):
        return os.path.basename(os.fspath(model))
    if isinstance(model, torch.jit.ScriptModule):
        return model.original_name
    return type(model).__name__


def _device_of(inputs) -> str:
    for t in _tensors(inputs):
        return str(t.device)  # cuda:1 stays cuda:1
    return "cpu"


def _tensors(value):
    if isinstance(value, torch.Tensor):
        yield value
    elif isinstance(value, (list, tuple)):
        for v in value:
            yield from _tensors(v)
    elif isinstance(value, dict):
        for v in value.values():
            yield from _tensors(v)


@contextlib.contextmanager
def _eval_mode(model: torch.nn.Module):
    training = model.training
    model.eval()
    try:
        yield
    finally:
        model.train(training)


def _first_line(e: BaseException, limit: int = 300) -> str:
    """The first line of an error, cut at `limit` characters (export's guard expressions run to pages)."""
    lines = str(e).strip().splitlines()
    line = lines[0] if lines else type(e).__name__
    return line if len(line) <= limit else line[:limit] + " …"


__all__ = ["optimize", "substitute", "load", "to_script_module", "export_module", "Error"]
