"""autograph.optimize / substitute / load from Python, and the torch.compile backend: outputs compared
with eager. Float32 on the same CPU kernels, BatchNorm folded: relative error bounded by 1e-4 of the
output's scale (rounding; a wrong schedule moves outputs by order 1)."""
import warnings
from typing import Tuple

import pytest
import torch

import autograph


class TwoBranches(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.a = torch.nn.Conv2d(3, 8, 3, padding=1)
        self.b = torch.nn.Conv2d(3, 8, 1)
        self.bn = torch.nn.BatchNorm2d(8)

    def forward(self, x):
        return self.bn(torch.relu(self.a(x))) + torch.sigmoid(self.b(x))


def _close(got, want, scale_tol=1e-4):
    assert got.shape == want.shape
    assert (got - want).abs().max().item() <= scale_tol * max(want.abs().max().item(), 1e-12)


@pytest.fixture
def model():
    torch.manual_seed(0)
    return TwoBranches().eval()


def test_optimize_nn_module_script_module_and_path(model, tmp_path):
    x = torch.randn(1, 3, 16, 16)
    with torch.no_grad():
        want = model(x)
    optimized, report = autograph.optimize(model, [x], method="nimble")
    assert isinstance(optimized, torch.jit.ScriptModule)
    assert report["method"] == "nimble" and report["device"] == "cpu" and report["operators_optimized"] > 0
    _close(optimized(x), want)
    scripted = torch.jit.script(model)
    optimized2, _ = autograph.optimize(scripted, x, method="autograph", verify=1, check_rewrites=False)
    _close(optimized2(x), want)
    path = tmp_path / "model.pt"
    torch.jit.save(scripted, str(path))
    optimized3, report3 = autograph.optimize(str(path), [x], method="greedy", max_streams=2)
    assert report3["streams"] <= 2
    _close(optimized3(x), want)


def test_optimized_module_saves_and_loads(model, tmp_path):
    x = torch.randn(2, 3, 16, 16)
    optimized, _ = autograph.optimize(model, [x], method="nimble")
    path = tmp_path / "opt.pt"
    torch.jit.save(optimized, str(path))
    again = autograph.load(path)
    with torch.no_grad():
        _close(again(x), model(x))


def test_training_mode_model_is_traced_in_eval_mode_and_left_as_it_was(model):
    model.train()
    x = torch.randn(1, 3, 16, 16)
    optimized, _ = autograph.optimize(model, [x], method="sequential")
    assert model.training
    model.eval()
    with torch.no_grad():
        _close(optimized(x), model(x))


def test_substitute(model):
    x = torch.randn(1, 3, 16, 16)
    substituted, report = autograph.substitute(model, [x])
    assert "linears_merged" in report
    with torch.no_grad():
        _close(substituted(x), model(x))


class WithDefaults(torch.nn.Module):
    def forward(self, x: torch.Tensor, pair: Tuple[torch.Tensor, torch.Tensor], scale: float = 2.0):
        return {"y": torch.relu(x) * scale + pair[0], "z": torch.sigmoid(pair[1])}


@pytest.mark.parametrize("entry", ["optimize", "substitute"])
def test_argument_names_and_defaults_are_kept(entry, tmp_path):
    # Found in review: substitute's module took its schema from the rewritten graph, so a call that
    # relied on a default failed ("missing value for argument 'scale'").
    scripted = torch.jit.script(WithDefaults())
    x = torch.randn(2, 8)
    module, _ = getattr(autograph, entry)(scripted, [x, (x, x), 2.0])
    assert str(module.forward.schema).split("self, ")[1] == str(scripted.forward.schema).split("self, ")[1]
    torch.jit.save(module, str(tmp_path / "m.pt"))
    again = autograph.load(tmp_path / "m.pt")
    with torch.no_grad():
        want = scripted(x, (x, x))
        for got in (module(x, (x, x)), again(x, pair=(x, x))):
            for key in want:
                _close(got[key], want[key])


def test_bad_options_and_models_are_typed_errors(model):
    x = torch.randn(1, 3, 16, 16)
    with pytest.raises(autograph.InputError, match="unknown option 'max_stream'"):
        autograph.optimize(model, [x], max_stream=2)
    with pytest.raises(autograph.InputError, match="option 'verify' has the wrong type"):
        autograph.optimize(model, [x], verify="three")
    with pytest.raises(ValueError):  # InputError is a ValueError too
        autograph.optimize(model, [torch.randn(1, 5, 16, 16)])
    with pytest.raises(autograph.UnsupportedModelError, match="expected an nn.Module"):
        autograph.optimize(42, [x])

    class Untraceable(torch.nn.Module):
        def forward(self, x):
            return x.numpy()  # an ndarray: the tracer takes no such output, TorchScript has no numpy()

    with pytest.raises(autograph.UnsupportedModelError, match="cannot turn Untraceable into TorchScript"):
        autograph.optimize(Untraceable(), [x])


def test_model_that_cannot_be_taken_apart_comes_back_with_the_reason(model):
    class Noisy(torch.nn.Module):
        def forward(self, x):
            print("side effect")
            return x + 1

    scripted = torch.jit.script(Noisy())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        optimized, report = autograph.optimize(scripted, [torch.randn(2)], method="nimble")
    x = torch.randn(2)
    assert torch.equal(optimized(x), x + 1)
    assert report["fallback"] or report["left_to_torchscript"]


class WithGraphBreak(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.first = TwoBranches()
        self.second = torch.nn.Conv2d(8, 4, 3, padding=1)

    def forward(self, x):
        y = self.first(x)
        torch._dynamo.graph_break()
        return torch.relu(self.second(y))


def test_torch_compile_backend_with_graph_break_and_new_shape():
    torch._dynamo.reset()
    torch.manual_seed(0)
    model = WithGraphBreak().eval()
    # (Inductor parts off: this is about graphs and signatures; the installed-package test compiles them)
    compiled = torch.compile(model, backend="autograph", options={"method": "nimble", "inductor": False, "openvino": False, "onnxruntime": False})
    counts = torch._dynamo.utils.counters
    counts.clear()
    with torch.no_grad(), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for shape in [(1, 3, 16, 16), (2, 3, 12, 12)]:
            x = torch.randn(*shape)
            _close(compiled(x), model(x))
    assert counts["stats"]["unique_graphs"] >= 2  # the graph break: two graphs at least
    # Every graph was optimized: none ran eagerly or as plain TorchScript.
    assert not [w for w in caught if "autograph backend" in str(w.message)], [str(w.message) for w in caught]


def test_torch_compile_backend_falls_back_to_eager_with_one_warning():
    torch._dynamo.reset()

    def f(x):
        x.add_(1)  # mutates its input: the export path refuses the graph
        return x * 2

    compiled = torch.compile(f, backend="autograph")
    x = torch.randn(8)
    a, b = x.clone(), x.clone()
    with pytest.warns(UserWarning, match="runs a captured graph eagerly"):
        with torch.no_grad():
            got = compiled(a)
    assert torch.allclose(got, f(b)) and torch.equal(a, b)


def test_torch_compile_backend_refuses_bad_options():
    """An option error is the user's to fix: torch.compile raises it instead of running eagerly."""
    torch._dynamo.reset()
    compiled = torch.compile(lambda x: x * 2, backend="autograph", options={"no_such_option": 1})
    with pytest.raises(Exception, match="unknown option 'no_such_option'"):
        with torch.no_grad():
            compiled(torch.randn(4))
    torch._dynamo.reset()
    compiled = torch.compile(lambda x: x * 2, backend="autograph", options={"ir": "onnx"})
    with pytest.raises(Exception, match="ir='onnx'"):
        with torch.no_grad():
            compiled(torch.randn(4))
    torch._dynamo.reset()  # an option of the other path: refused at the call too
    compiled = torch.compile(lambda x: x * 2, backend="autograph", options={"stitch": False})
    with pytest.raises(Exception, match="option 'stitch' applies to the TorchScript path"):
        with torch.no_grad():
            compiled(torch.randn(4))
    torch._dynamo.reset()  # calibration inputs are the model's, not a captured graph's
    compiled = torch.compile(lambda x: x * 2, backend="autograph",
                             options={"precision": "bf16", "calibration": [(torch.randn(4),)]})
    with pytest.raises(Exception, match="calibration: the autograph backend takes none"):
        with torch.no_grad():
            compiled(torch.randn(4))


def test_bad_options_are_refused_before_any_export():
    class Branchy(torch.nn.Module):  # torch.export cannot take it: the option error must come first
        def forward(self, x):
            return x * 2 if x.sum() > 0 else x - 1

    with pytest.raises(autograph.InputError, match="unknown option 'max_stream'"):
        autograph.optimize(Branchy(), (torch.randn(3),), ir="export", max_stream=2)


def test_torch_compile_backend_freezes_buffers_like_parameters(monkeypatch):
    """A buffer (here a scale; BatchNorm's running statistics alike) is frozen into the optimized graph
    as parameters are, not passed at every call as an input."""
    from autograph import dynamo
    torch._dynamo.reset()

    class Scaled(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.linear = torch.nn.Linear(4, 4)
            self.register_buffer("scale", torch.tensor(2.0))

        def forward(self, x):
            return self.linear(x) * self.scale

    inputs_seen = []
    real = dynamo.optimize

    def spy(model, inputs, **options):
        inputs_seen.append(len(inputs))
        return real(model, inputs, **options)

    monkeypatch.setattr(dynamo, "optimize", spy)
    model, x = Scaled().eval(), torch.randn(2, 4)
    with torch.no_grad():
        got = torch.compile(model, backend="autograph", options={"inductor": False, "openvino": False, "onnxruntime": False})(x)
        want = model(x)
    assert torch.allclose(got, want, rtol=1e-5, atol=1e-6)
    assert inputs_seen == [1]  # x alone: the linear's weight and bias and the buffer are frozen
