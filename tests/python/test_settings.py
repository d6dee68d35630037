"""autograph.Settings and the option table: the Python dataclass agrees with the C++ declaration
(names, types, defaults), bad values are InputErrors before any work, keywords win over a Settings,
the README's table is what the declaration gives, and strict=True turns quiet fallbacks into errors."""
import dataclasses
import subprocess
import sys
import typing
import warnings
from pathlib import Path

import pytest
import torch

import autograph

ROOT = Path(__file__).resolve().parents[2]
_PYTHON_TYPES = {"bool": bool, "int": int, "float": float, "str": str}
_PYTHON_ALSO_CALLABLE = {"accuracy"}  # the table says so in its help


def test_settings_mirror_the_declared_options():
    table = {o["name"]: o for o in autograph.option_table()}
    fields = {f.name: f for f in dataclasses.fields(autograph.Settings)}
    assert list(fields) == list(table)  # same names, same order
    hints = typing.get_type_hints(autograph.Settings)
    for name, option in table.items():
        want = _PYTHON_TYPES[option["type"]]
        if "default_note" in option:  # decided at the call: None here
            assert fields[name].default is None, name
            assert hints[name] == typing.Optional[want], name
        elif name in _PYTHON_ALSO_CALLABLE:  # a built-in's name, or from Python a function
            assert fields[name].default == option["default"], name
            assert hints[name] == typing.Union[want, typing.Callable[..., float]], name
        else:
            assert fields[name].default == option["default"], name
            assert hints[name] is want, name


def test_bad_settings_are_input_errors_before_any_work():
    with pytest.raises(autograph.InputError, match="option 'max_streams' is 0; expected 1..64"):
        autograph.Settings(max_streams=0)
    with pytest.raises(autograph.InputError, match="option 'method' is \"fastest\""):
        autograph.Settings(method="fastest")
    with pytest.raises(autograph.InputError, match="a device autograph does not plan for"):
        autograph.Settings(device="mps")
    with pytest.raises(autograph.InputError, match="unknown option 'max_stream'"):
        autograph.Settings.of(max_stream=2)
    assert autograph.Settings(device=torch.device("cuda", 1)).device == "cuda:1"  # parsed, not opened

    class Branchy(torch.nn.Module):  # never traced or exported: the option error comes first
        def forward(self, x):
            return x * 2 if x.sum() > 0 else x - 1

    with pytest.raises(autograph.InputError, match="option 'verify' is 99"):
        autograph.optimize(Branchy(), (torch.randn(3),), ir="export", verify=99)
    with pytest.raises(autograph.InputError, match="settings must be an autograph.Settings"):
        autograph.optimize(Branchy(), (torch.randn(3),), settings={"verify": 1})


def test_keywords_win_over_settings():
    model = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.ReLU()).eval()
    x = torch.randn(2, 8)
    settings = autograph.Settings(method="nimble", max_streams=2, stitch=False, check_rewrites=False)
    _, report = autograph.optimize(model, [x], settings=settings)
    assert report["method"] == "nimble"
    _, report = autograph.optimize(model, [x], settings=settings, method="sequential")
    assert report["method"] == "sequential"
    assert autograph.Settings.of(settings, max_streams=3) == dataclasses.replace(settings, max_streams=3)


def test_options_for_the_other_path_are_refused_not_ignored():
    """An option whose "applies" names one path alone is an InputError on the other, set by keyword (at its
    default value too) or in a Settings, before any tracing or export; options of both paths or of a device
    (cuda_graph on the CPU: ignored there, as the table says) pass."""
    class Branchy(torch.nn.Module):  # never traced or exported: the option error comes first
        def forward(self, x):
            return x * 2 if x.sum() > 0 else x - 1

    model, x = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.ReLU()).eval(), torch.randn(2, 8)
    to_export = r"option '{}' applies to the export path \(\"export path.*\"\), not the TorchScript path this model " \
                r"takes: drop it here. The export path takes an ExportedProgram, or ir=\"export\""
    for name, value in (("openvino", False), ("inductor", False), ("onnxruntime", False), ("openvino", True),
                        ("inductor", True)):
        with pytest.raises(autograph.InputError, match=to_export.format(name)):
            autograph.optimize(Branchy(), (x,), **{name: value})
    with pytest.raises(autograph.InputError, match=to_export.format("inductor")):
        autograph.optimize(torch.jit.script(Branchy()), [x], settings=autograph.Settings(inductor=False))
    with pytest.raises(autograph.InputError, match=to_export.format("openvino")):
        autograph.substitute(Branchy(), [x], openvino=False)

    to_torchscript = r"option '{}' applies to the TorchScript path \(\"TorchScript path.*\"\), not the export path " \
                     r"this model takes: drop it here. The TorchScript path takes a ScriptModule"
    for name, value in (("substitutions", True), ("stitch", False), ("fuse_attention", True), ("plan_new_shapes", 0),
                        ("prepack_onednn", False)):
        with pytest.raises(autograph.InputError, match=to_torchscript.format(name)):
            autograph.optimize(Branchy(), (x,), ir="export", **{name: value})
    ep = torch.export.export(model, (x,))
    with pytest.raises(autograph.InputError, match=to_torchscript.format("stitch")):
        autograph.optimize(ep, settings=autograph.Settings(stitch=False))

    # What applies to both paths, or names a device, passes on either.
    _, report = autograph.optimize(model, [x], method="sequential", cuda_graph=False, check_rewrites=False,
                                   stitch=False, max_cuda_graphs=2)
    assert report["method"] == "sequential"
    _, report = autograph.optimize(ep, method="sequential", cuda_graph=True, inductor=False, openvino=False, onnxruntime=False)
    assert report["method"] == "sequential"

    # The C++ entry points refuse them too (what Python checks first): the keys given, whatever their value.
    import json
    autograph.load_library()
    scripted = torch.jit.trace(model, (x,))
    with pytest.raises(ValueError, match="option 'openvino' applies to the export path"):
        torch.ops.autograph.optimize(scripted, [x], json.dumps({"openvino": True}), [])
    with pytest.raises(ValueError, match="option 'stitch' applies to the TorchScript path"):
        torch.ops.autograph.optimize_exported("{}", [], json.dumps({"stitch": True}))


def test_readme_option_table_is_the_declarations():
    result = subprocess.run([sys.executable, str(ROOT / "scripts" / "option_docs.py"), "--check"],
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stderr


def test_strict_raises_where_optimize_would_fall_back():
    class Counter(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.calls = 0

        def forward(self, x):
            self.calls += 1  # an attribute written in forward: the module cannot be frozen
            return x + 1

    scripted = torch.jit.script(Counter())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        same, report = autograph.optimize(scripted, [torch.randn(2)], method="nimble")
    assert report["fallback"] and same is not None
    with pytest.raises(autograph.UnsupportedModelError, match="strict: the model was not optimized: .*module"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            autograph.optimize(scripted, [torch.randn(2)], method="nimble", strict=True)


def test_strict_raises_for_a_failed_candidate_not_for_a_compiler_that_is_not_installed(monkeypatch):
    from autograph.export.compilers import inductor as inductor_parts
    from autograph.export.compilers import openvino as openvino_parts
    missing = lambda: "the openvino package is not installed"  # noqa: E731
    monkeypatch.setattr(openvino_parts, "openvino_missing", missing)
    torch.manual_seed(0)
    model, x = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.ReLU()).eval(), torch.randn(2, 8)
    _, report = autograph.optimize(model, (x,), ir="export", method="sequential", onnxruntime=False, strict=True)
    assert report["inductor"]["not_available"] == ["whole_openvino"]
    assert "not available" in report["inductor"]["errors"]["whole_openvino"]

    def fails(*args, **kwargs):
        raise RuntimeError("the compiler crashed")

    monkeypatch.setattr(inductor_parts, "compile_part", fails)
    with pytest.raises(autograph.Error, match="strict: compiled candidates failed: whole: .*crashed"):
        autograph.optimize(model, (x,), ir="export", method="sequential", onnxruntime=False, strict=True)


def test_strict_backend_raises_instead_of_running_eagerly():
    torch._dynamo.reset()

    def f(x):
        x.add_(1)  # mutates its input: the export path refuses the graph
        return x * 2

    compiled = torch.compile(f, backend="autograph", options={"strict": True})
    with pytest.raises(Exception, match="mutat"):
        with torch.no_grad():
            compiled(torch.randn(8))
    torch._dynamo.reset()
    with pytest.raises(Exception, match="strict"):
        with torch.no_grad():
            torch.compile(f, backend="autograph", options={"strict": "yes"})(torch.randn(8))
