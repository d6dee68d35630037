"""Exported programs with dynamic shapes: planned at the example's shapes, every other shape in the
exported range run on the program's own graph with its sizes computed (aten::sym_size,
autograph::scalar_op), the optimized program exported with the same dims and ranges. Outputs
compared with eager's at relative 1e-5 of their scale (float32, the same ATen kernels; only
reduction orders may differ), 1e-4 where Inductor's generated code runs (its own reduction order
and fused arithmetic)."""
import json
import operator
import subprocess
import sys
from pathlib import Path

import pytest
import torch

import autograph

ROOT = Path(__file__).resolve().parents[2]
TOL = 1e-5


def _close(got, want, tol=TOL):
    assert got.shape == want.shape and got.dtype == want.dtype
    assert (got - want).abs().max().item() <= tol * max(want.abs().max().item(), 1e-12)


class BranchyCnn(torch.nn.Module):
    """Two branches side by side, then a flatten and a view whose sizes follow the batch."""

    def __init__(self):
        super().__init__()
        self.c1 = torch.nn.Conv2d(3, 8, 3, padding=1)
        self.c2 = torch.nn.Conv2d(8, 8, 3, padding=1)
        self.c3 = torch.nn.Conv2d(8, 8, 1)
        self.fc = torch.nn.Linear(8 * 8 * 8, 10)

    def forward(self, x):
        y = torch.relu(self.c1(x))
        z = (self.c2(y) + self.c3(y)).flatten(1)
        return self.fc(z).view(x.shape[0], 2, 5)


class TinyEncoder(torch.nn.Module):
    """Token ids of any batch and length: attention, then a head over reshaped tokens."""

    def __init__(self):
        super().__init__()
        self.emb = torch.nn.Embedding(100, 32)
        self.enc = torch.nn.TransformerEncoderLayer(32, 4, 64, batch_first=True, dropout=0.0)
        self.head = torch.nn.Linear(32, 3)

    def forward(self, ids):
        h = self.enc(self.emb(ids))
        b, n, d = h.shape
        return self.head(h.reshape(b * n, d)).reshape(b, n, 3).mean(1)


@pytest.fixture
def cnn():
    torch.manual_seed(0)
    model = BranchyCnn().eval()
    x = torch.randn(4, 3, 8, 8)
    ep = torch.export.export(model, (x,), dynamic_shapes=({0: torch.export.Dim("batch", min=1, max=64)},))
    return model, x, ep


def _runs_in_a_fresh_process(optimized, model, batches, tmp_path, tol):
    """Saves `optimized`, loads it in a new Python process and checks its outputs at each batch size."""
    path = tmp_path / "optimized.pt2"
    torch.export.save(optimized, str(path))
    xs = [torch.randn(n, 3, 8, 8) for n in batches]
    with torch.no_grad():
        torch.save({"xs": xs, "want": [model(x) for x in xs]}, tmp_path / "io.pt")
    script = f"""
import sys, torch
sys.path.insert(0, {str(ROOT / 'python')!r})
import autograph
ep = torch.export.load({str(path)!r})
io = torch.load({str(tmp_path / 'io.pt')!r})
for x, want in zip(io["xs"], io["want"]):
    got = ep.module()(x)
    err = (got - want).abs().max().item() / want.abs().max().item()
    assert got.shape == want.shape and err <= {tol}, (x.shape, err)
print("ok")
"""
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    assert "ok" in run.stdout


def _header(optimized):
    (call,) = [n for n in optimized.graph.nodes if n.target == torch.ops.autograph.execute.default]
    text = call.args[1]
    return json.loads(text[:text.index("\n")])


def test_dynamic_batch_plans_the_example_shape_and_runs_every_other(cnn):
    model, x, ep = cnn
    optimized, report = autograph.optimize(ep, method="autograph", inductor=False, openvino=False, onnxruntime=False)
    assert report["dynamic_shapes"]["planned_for"] == [[4, 3, 8, 8]]
    header = _header(optimized)
    assert header["dynamic"] and header["version"] == 2
    (arg,) = [n for n in optimized.graph.nodes if n.op == "placeholder" and n.name.startswith("args")]
    assert not isinstance(arg.meta["val"].shape[0], int)  # the batch stays symbolic in the optimized program
    with torch.no_grad():
        for n in (4, 1, 7, 64):
            xi = torch.randn(n, 3, 8, 8)
            _close(optimized.module()(xi), model(xi))
    with pytest.raises(Exception, match="64"):  # the exported range still holds
        optimized.module()(torch.randn(65, 3, 8, 8))


def test_transformer_with_dynamic_batch_and_length():
    torch.manual_seed(0)
    model = TinyEncoder().eval()
    ids = torch.randint(0, 100, (2, 16))
    dims = {0: torch.export.Dim("batch", min=1, max=8), 1: torch.export.Dim("length", min=2, max=256)}
    optimized, report = autograph.optimize(model, (ids,), ir="export", dynamic_shapes=(dims,), inductor=False, openvino=False, onnxruntime=False)
    assert report["dynamic_shapes"]["planned_for"] == [[2, 16]]
    with torch.no_grad():
        for b, n in ((2, 16), (1, 5), (8, 256), (3, 77)):
            x = torch.randint(0, 100, (b, n))
            _close(optimized.module()(x), model(x))


def test_dynamic_program_saved_and_run_in_a_fresh_process(cnn, tmp_path):
    model, _, ep = cnn
    optimized, _ = autograph.optimize(ep, method="autograph", inductor=False, openvino=False, onnxruntime=False)
    _runs_in_a_fresh_process(optimized, model, (4, 3, 17), tmp_path, TOL)


def test_dynamic_program_compiles_with_aotinductor(cnn, tmp_path):
    model, _, ep = cnn
    optimized, _ = autograph.optimize(ep, method="autograph", inductor=False, openvino=False, onnxruntime=False)
    package = torch._inductor.aoti_compile_and_package(optimized, package_path=str(tmp_path / "dynamic_aoti.pt2"))
    runner = torch._inductor.aoti_load_package(package)
    with torch.no_grad():
        for n in (4, 9):
            x = torch.randn(n, 3, 8, 8)
            _close(runner(x), model(x))


def test_inductor_compiles_the_plan_and_a_package_for_every_other_shape(cnn, tmp_path):
    """With Inductor on, the plan's parts are compiled for the example's shape and the whole program
    once more for every shape in its range; the optimized program then carries no raw weight at all
    (the graph for other shapes only describes their sizes), saves, and runs in a fresh process."""
    model, x, ep = cnn
    optimized, report = autograph.optimize(ep, method="autograph", check_rewrites=False)
    errors = {name: why for name, why in report["inductor"]["errors"].items()  # less OpenVINO where not installed
              if not (name == "whole_openvino" and "is not available" in why)}
    assert report["inductor"]["kept"] in ("plan", "whole") and not errors
    dynamic = report["dynamic_shapes"]
    assert dynamic["other_shapes"] == "inductor" and "error" not in dynamic and dynamic["compile_s"] >= 0
    assert all(t.dtype == torch.uint8 for t in optimized.state_dict.values())  # packages only
    with torch.no_grad():
        for n in (4, 2, 11):
            xi = torch.randn(n, 3, 8, 8)
            _close(optimized.module()(xi), model(xi), tol=1e-4)
    _runs_in_a_fresh_process(optimized, model, (4, 5), tmp_path, 1e-4)


def test_the_package_for_other_shapes_is_kept_only_when_faster(cnn):
    """Measured (check_rewrites on): the report has both times and the kept one is the faster."""
    model, _, ep = cnn
    optimized, report = autograph.optimize(ep, method="sequential")
    dynamic = report["dynamic_shapes"]
    times = dynamic["median_ms"]
    assert set(times) == {"inductor", "aten"} and all(t > 0 for t in times.values())
    if times["inductor"] < times["aten"]:  # then judged at a larger batch too: 4 times the example's 4
        (larger,) = dynamic["median_ms_at"]
        assert larger["shapes"] == [[16, 3, 8, 8]]
        assert dynamic["other_shapes"] == ("inductor" if larger["inductor"] < larger["aten"] else "aten")
    else:
        assert dynamic["other_shapes"] == "aten" and "median_ms_at" not in dynamic
    with torch.no_grad():
        xi = torch.randn(6, 3, 8, 8)
        _close(optimized.module()(xi), model(xi), tol=1e-4)


@pytest.mark.parametrize("op, a, b", [
    ("floordiv", -7, 2), ("floordiv", 7, -2), ("mod", -7, 3), ("mod", 7, -3), ("truediv", 7, 2),
    ("mul", 6, 7), ("sub", 3, 10), ("pow", 2, 10), ("max", 3, 9), ("min", 3, 9), ("ge", 3, 3), ("lt", 4, 3),
    ("floordiv", 7.5, 2), ("mod", -7.5, 2.0), ("add", 1, 0.5)])
def test_scalar_op_follows_python_semantics(op, a, b):
    python = {"floordiv": operator.floordiv, "mod": operator.mod, "truediv": operator.truediv, "mul": operator.mul,
              "sub": operator.sub, "pow": operator.pow, "max": max, "min": min, "ge": operator.ge, "lt": operator.lt,
              "add": operator.add}[op]
    got, want = torch.ops.autograph.scalar_op(op, a, b), python(a, b)
    assert got == want and type(got) is type(want)


def test_scalar_op_errors():
    with pytest.raises(RuntimeError, match="division by zero"):
        torch.ops.autograph.scalar_op("floordiv", 1, 0)
    with pytest.raises(RuntimeError, match="unknown binary operation 'xor'"):
        torch.ops.autograph.scalar_op("xor", 1, 2)
    assert torch.ops.autograph.scalar_op("neg", 3) == -3 and torch.ops.autograph.scalar_op("ceil", 2.5) == 3


def test_graph_for_other_shapes_that_does_not_fit_the_plan_is_refused(cnn):
    _, _, ep = cnn
    optimized, _ = autograph.optimize(ep, method="sequential", inductor=False, openvino=False, onnxruntime=False)
    (call,) = [n for n in optimized.graph.nodes if n.target == torch.ops.autograph.execute.default]
    text = call.args[1]
    body = json.loads(text[text.index("\n") + 1:])
    graph = json.dumps(body["other_shapes"]["graph"])
    with pytest.raises(RuntimeError, match="input positions"):
        torch.ops.autograph.with_graph_for_other_shapes(text, graph, [0, 1])
    with pytest.raises(RuntimeError, match="not the plan's input"):
        torch.ops.autograph.with_graph_for_other_shapes(text, graph, [8, 1, 2, 3, 4, 5, 6, 7, 0])


def test_planned_for_the_inputs_given_not_the_exported_example(cnn):
    """optimize(ep, inputs) plans at the given inputs' shapes, whatever example the program was exported
    with; the graph for other shapes is recorded at those sizes too."""
    model, _, ep = cnn  # exported at batch 4
    x = torch.randn(6, 3, 8, 8)
    optimized, report = autograph.optimize(ep, (x,), method="sequential", inductor=False, openvino=False, onnxruntime=False)
    assert report["dynamic_shapes"]["planned_for"] == [[6, 3, 8, 8]]
    with torch.no_grad():
        for n in (6, 4, 1):
            xi = torch.randn(n, 3, 8, 8)
            _close(optimized.module()(xi), model(xi))


def test_a_recurrent_program_runs_other_shapes_on_aten_without_a_package_for_every_shape():
    """Inductor unrolls a recurrent layer step by step (its compile grows with the sequence), so a program
    with an LSTM gets no package for every shape: the report says why, and other batches run the program's
    own graph on ATen's kernels, as eager computes them."""
    class Tagger(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.lstm = torch.nn.LSTM(8, 16, batch_first=True)
            self.head = torch.nn.Linear(16, 4)

        def forward(self, x):
            return self.head(self.lstm(x)[0])

    torch.manual_seed(0)
    model, x = Tagger().eval(), torch.randn(2, 12, 8)
    ep = torch.export.export(model, (x,), dynamic_shapes=({0: torch.export.Dim("batch", min=1, max=64)},))
    optimized, report = autograph.optimize(ep, method="sequential", check_rewrites=False)
    dynamic = report["dynamic_shapes"]
    assert dynamic["other_shapes"] == "aten" and "aten::lstm" in dynamic["error"], dynamic
    assert "compile_s" not in dynamic, dynamic
    with torch.no_grad():
        for batch in (2, 1, 9):
            xi = torch.randn(batch, 12, 8)
            _close(optimized.module()(xi), model(xi))
