"""The export path: torch.export programs in, optimized ExportedPrograms out (autograph::execute), saved
with torch.export.save and loaded in a fresh process. Outputs compared with the original program's.
Float32 on the same CPU kernels (the export's functional graph keeps BatchNorm as its own op, nothing
is folded): the only differences are in what runs concurrently, so the relative error is bounded by
1e-5 of the output's scale (intra-op thread counts change reduction orders); a wrong schedule or
wiring moves outputs by order 1. Inductor-compiled parts are off here (inductor=False, openvino=False, onnxruntime=False: these tests are
about the plan and the program on ATen's kernels); test_inductor_parts.py tests them."""
import json
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from torch.export import ExportedProgram

import autograph

ROOT = Path(__file__).resolve().parents[2]
TOL = 1e-5


def _program_and_weights(optimized):
    (call,) = [n for n in optimized.graph.nodes if n.target == torch.ops.autograph.execute.default]
    weights = [optimized.state_dict[f"weight_{i}"] for i in range(len(optimized.state_dict))]
    return call.args[1], weights


def _close(got, want, tol=TOL):
    assert got.shape == want.shape and got.dtype == want.dtype
    assert (got - want).abs().max().item() <= tol * max(want.abs().max().item(), 1e-12)


class Inception(torch.nn.Module):
    """Four branches on one input (the concurrency autograph schedules), BatchNorm, a split whose
    pieces are used apart (a list return and its getitems), pooling with indices (several returns)."""

    def __init__(self):
        super().__init__()
        self.b1 = torch.nn.Conv2d(8, 8, 1)
        self.b2 = torch.nn.Sequential(torch.nn.Conv2d(8, 8, 1), torch.nn.ReLU(), torch.nn.Conv2d(8, 8, 3, padding=1))
        self.b3 = torch.nn.Sequential(torch.nn.Conv2d(8, 4, 1), torch.nn.BatchNorm2d(4), torch.nn.Conv2d(4, 8, 5, padding=2))
        self.pool = torch.nn.MaxPool2d(3, stride=1, padding=1, return_indices=True)
        self.head = torch.nn.Linear(16, 10)

    def forward(self, x):
        pooled, _ = self.pool(x)
        y = torch.cat([self.b1(x), self.b2(x), self.b3(x), pooled], dim=1)
        a, b = torch.split(y, [16, 16], dim=1)
        z = torch.relu(a) * torch.sigmoid(b)
        return self.head(z.mean(dim=(2, 3)))


class TwoInTwoOut(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.q = torch.nn.Linear(16, 16)
        self.k = torch.nn.Linear(16, 16)
        self.register_buffer("scale", torch.tensor(0.25))

    def forward(self, x, mask):
        # (/ 2.0: a Python number where div.Tensor takes a tensor, as BERT's attention scaling)
        s = torch.softmax(self.q(x) @ self.k(x).transpose(-1, -2) * self.scale / 2.0 + mask, dim=-1)
        return {"scores": s, "pooled": (s @ x).sum(dim=1)}


@pytest.fixture
def inception():
    torch.manual_seed(0)
    model = Inception().eval()
    x = torch.randn(2, 8, 12, 12)
    return model, x, torch.export.export(model, (x,))


@pytest.mark.parametrize("method", ["sequential", "nimble", "ios", "autograph"])
def test_exported_program_optimized_by_each_method(inception, method):
    model, x, ep = inception
    optimized, report = autograph.optimize(ep, method=method, inductor=False, openvino=False, onnxruntime=False)
    assert isinstance(optimized, ExportedProgram)
    assert report["method"] == method and report["device"] == "cpu"
    assert report["operators_before"] > 10 and report["operators_optimized"] == report["operators_before"]
    calls = [n.target for n in optimized.graph.nodes if n.op == "call_function" and "getitem" not in str(n.target)]
    assert calls == [torch.ops.autograph.execute.default]
    with torch.no_grad():
        want = model(x)
    _close(optimized.module()(x), want)
    if method == "autograph":
        assert report["candidates_verified"] >= 1 and report["measured_ms"] > 0
        assert report["streams"] >= 1 and report["stages"] <= report["operators_before"]


def test_branches_run_concurrently_under_nimble(inception):
    _, _, ep = inception
    _, report = autograph.optimize(ep, method="nimble", inductor=False, openvino=False, onnxruntime=False)
    assert report["streams"] >= 3  # the four branches of the block, at least three side by side


def test_saved_program_loads_and_runs_in_a_fresh_process(inception, tmp_path):
    model, x, ep = inception
    optimized, _ = autograph.optimize(ep, method="autograph", verify=1, inductor=False, openvino=False, onnxruntime=False)
    path = tmp_path / "inception_opt.pt2"
    torch.export.save(optimized, str(path))
    torch.save({"x": x, "want": model(x).detach()}, tmp_path / "io.pt")
    script = f"""
import sys, torch
sys.path.insert(0, {str(ROOT / 'python')!r})
import autograph
ep = torch.export.load({str(path)!r})
io = torch.load({str(tmp_path / 'io.pt')!r})
got = ep.module()(io["x"])
err = (got - io["want"]).abs().max().item() / io["want"].abs().max().item()
assert err <= {TOL}, err
print("ok", [n.target for n in ep.graph.nodes if n.op == "call_function"][0])
"""
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    assert "ok autograph.execute.default" in run.stdout


def test_nn_module_exported_for_the_user_with_structured_io():
    torch.manual_seed(0)
    model = TwoInTwoOut().eval()
    x, mask = torch.randn(1, 6, 16), torch.zeros(1, 6, 6)
    optimized, report = autograph.optimize(model, (x, mask), ir="export", method="nimble", inductor=False, openvino=False, onnxruntime=False)
    assert isinstance(optimized, ExportedProgram) and report["operators_before"] > 5
    got, want = optimized.module()(x, mask), model(x, mask)
    assert set(got) == {"scores", "pooled"}
    _close(got["scores"], want["scores"].detach())
    _close(got["pooled"], want["pooled"].detach())
    # Other inputs of the same shapes: the program is not specialized to the example's values.
    x2, mask2 = torch.randn(1, 6, 16), torch.randn(1, 6, 6)
    _close(optimized.module()(x2, mask2)["pooled"], model(x2, mask2)["pooled"].detach())


def test_optimized_program_exports_and_traces_again(inception):
    """The fake kernel lets export (and so AOTInductor) trace the optimized program."""
    _, x, ep = inception
    optimized, _ = autograph.optimize(ep, method="sequential", inductor=False, openvino=False, onnxruntime=False)
    again = torch.export.export(optimized.module(), (x,))
    assert [n.target for n in again.graph.nodes if n.op == "call_function"][0] == torch.ops.autograph.execute.default
    _close(again.module()(x), optimized.module()(x))


def test_data_dependent_control_flow_names_the_torchscript_path():
    class Branchy(torch.nn.Module):
        def forward(self, x):
            return x * 2 if x.sum() > 0 else x - 1

    with pytest.raises(autograph.UnsupportedModelError, match="TorchScript path"):
        autograph.optimize(Branchy(), (torch.randn(3),), ir="export", inductor=False, openvino=False, onnxruntime=False)


def test_buffer_mutation_is_refused_with_a_clear_error():
    class Counter(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("n", torch.zeros(1))

        def forward(self, x):
            self.n.add_(1)
            return x + self.n

    with pytest.raises(autograph.UnsupportedModelError, match="mutates"):
        autograph.optimize(Counter(), (torch.randn(3),), ir="export", inductor=False, openvino=False, onnxruntime=False)


def test_measured_costs_time_the_exported_graphs_stages(inception, tmp_path):
    """cost="measured" on an exported program: each stage the search considers is cut out of the ATen
    graph and run on the device (stages_measured), memoized in the disk cache the option names; the
    program is right whatever the costs said."""
    model, x, ep = inception
    cache = str(tmp_path / "costs.json")
    optimized, report = autograph.optimize(ep, method="autograph", cost="measured", cost_cache=cache,
                                           inductor=False, openvino=False, onnxruntime=False)
    assert report["cost"].startswith("measured:cpu")
    assert report["stages_measured"] > 0
    with torch.no_grad():
        _close(optimized.module()(x), model(x))
    _, again = autograph.optimize(ep, method="autograph", cost="measured", cost_cache=cache, inductor=False, openvino=False, onnxruntime=False)
    assert again["stages_measured"] == 0 and again["cost_cache_hits"] > 0


def test_bad_options_and_inputs(inception):
    model, x, ep = inception
    with pytest.raises(autograph.InputError, match="unknown ir"):
        autograph.optimize(model, (x,), ir="onnx", inductor=False, openvino=False, onnxruntime=False)
    optimized, _ = autograph.optimize(ep, method="sequential", inductor=False, openvino=False, onnxruntime=False)
    program, weights = _program_and_weights(optimized)
    with pytest.raises(ValueError, match=rf"tensor {len(weights)} \(an input\) is \[8,12,12\] Float, but the program was optimized for"):
        torch.ops.autograph.execute(weights + [torch.randn(8, 12, 12)], program)
    with pytest.raises(ValueError, match="takes .* tensors"):
        torch.ops.autograph.execute(weights, program)


def test_aten_graph_reads_shapes_from_the_export_metadata(inception):
    _, x, ep = inception
    graph, weights = autograph.export.aten_graph_of(ep)
    user_inputs = [v for v, w in zip(graph["inputs"], graph["weights"]) if not w]
    assert len(user_inputs) == 1 and graph["values"][user_inputs[0]]["shape"] == list(x.shape)
    assert len(weights) == sum(graph["weights"])
    ops = {n["op"] for n in graph["nodes"]}
    assert {"aten::conv2d", "aten::max_pool2d_with_indices", "aten::split_with_sizes", "getitem"} <= ops
    json.dumps(graph)  # plain JSON


def test_corrupted_program_text_is_a_clear_error(inception):
    _, x, ep = inception
    optimized, _ = autograph.optimize(ep, method="sequential", inductor=False, openvino=False, onnxruntime=False)
    text, weights = _program_and_weights(optimized)
    with pytest.raises(RuntimeError, match="digest does not match"):
        torch.ops.autograph.execute(weights + [x], text[:-10] + "0" * 10)
    with pytest.raises(RuntimeError, match="not an autograph program"):
        torch.ops.autograph.execute(weights + [x], "hello\nworld")


class Siblings(torch.nn.Module):
    """Sibling 1x1 convolutions on one input and sibling linears on another: what a Merge stage runs
    as one wider kernel, built from the program's own weights."""

    def __init__(self):
        super().__init__()
        self.convs = torch.nn.ModuleList(torch.nn.Conv2d(16, c, 1) for c in (8, 12, 4))
        self.q, self.k, self.v = (torch.nn.Linear(32, 32) for _ in range(3))

    def forward(self, x, y):
        z = torch.cat([torch.relu(c(x)) for c in self.convs], dim=1)
        return z, torch.softmax(self.q(y) @ self.k(y).transpose(-1, -2), dim=-1) @ self.v(y)


def test_merged_stages_are_built_from_the_programs_weights(tmp_path):
    """IOS (no on-board choice, so the plan is what its costs say) merges the siblings; the saved
    program rebuilds the merged weights from the weights it is handed when it runs, in a fresh process
    too, and again after they are written in place. Merged kernels add the same products in another
    order: within 1e-5 of the output's scale."""
    torch.manual_seed(0)
    model = Siblings().eval()
    x, y = torch.randn(2, 16, 7, 7), torch.randn(2, 5, 32)
    optimized, report = autograph.optimize(model, (x, y), ir="export", method="ios", inductor=False, openvino=False, onnxruntime=False)
    merges = [s for s in report["schedule"]["stages"] if s["strategy"] == "merge"]
    assert merges and report["linears_merged"] >= 1, report["schedule"]
    with torch.no_grad():
        want = model(x, y)
    got = optimized.module()(x, y)
    for g, w in zip(got, want):
        _close(g, w)

    # Weights written in place (a fine-tuned checkpoint loaded into the program): merged again.
    with torch.no_grad():
        for t in optimized.state_dict.values():
            t.mul_(0.5)
        for p in model.parameters():
            p.mul_(0.5)
        want = model(x, y)
    got = optimized.module()(x, y)
    for g, w in zip(got, want):
        _close(g, w)

    path = tmp_path / "siblings.pt2"
    torch.export.save(optimized, str(path))
    torch.save({"x": x, "y": y, "want": list(want)}, tmp_path / "io.pt")
    script = f"""
import sys, torch
sys.path.insert(0, {str(ROOT / 'python')!r})
import autograph
ep = torch.export.load({str(path)!r})
io = torch.load({str(tmp_path / 'io.pt')!r})
for got, want in zip(ep.module()(io["x"], io["y"]), io["want"]):
    err = (got - want).abs().max().item() / want.abs().max().item()
    assert err <= {TOL}, err
print("ok")
"""
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    assert "ok" in run.stdout


@pytest.mark.parametrize("device", ["cpu", pytest.param("cuda", marks=pytest.mark.skipif(
    not torch.cuda.is_available(), reason="needs a CUDA device (scripts/gpu_quick_check.sh)"))])
def test_another_program_of_the_same_text_runs_on_its_own_weights(device):
    """Two models of one architecture optimize to one program text, which the process runs once
    (AtenProgram::Cached). Each call runs on the weights it passes: on CUDA the captured graph reads
    weights where they are (never copied per call), so the second model's weights get a graph of
    their own, and the first model's calls after it still read the first model's. Both TF32 switches
    off: the same kernels on other weights, within FP32 rounding (TOL). Rewrites unmeasured: on CUDA the
    cuDNN-fused plan competes on time with the plain one, and either may win for either model."""
    tf32 = torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32
    torch.backends.cudnn.allow_tf32 = torch.backends.cuda.matmul.allow_tf32 = False
    try:
        torch.manual_seed(0)
        models = [Inception().to(device).eval() for _ in range(2)]
        x = torch.randn(2, 8, 12, 12, device=device)
        programs = []
        for model in models:
            optimized, _ = autograph.optimize(model, (x,), ir="export", method="nimble", inductor=False, openvino=False,
                                              onnxruntime=False, check_rewrites=False)
            programs.append(_program_and_weights(optimized))
        assert programs[0][0] == programs[1][0]  # one text: the premise
        text = programs[0][0]
        with torch.no_grad():
            wants = [model(x) for model in models]
        for k in (0, 1, 0, 1):
            y = torch.randn_like(x)  # a new input each call: copied into the graph's buffer
            with torch.no_grad():
                want = models[k](y)
            (got,) = torch.ops.autograph.execute(programs[k][1] + [y], text)
            _close(got, want)
        (got,) = torch.ops.autograph.execute(programs[0][1] + [x], text)
        _close(got, wants[0])
    finally:
        torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32 = tf32


class InPlace(torch.nn.Module):
    """What export's training IR keeps in place: ReLU(inplace=True), a residual `out += x`, and a value
    read again after it was written (`y.relu_()` whose result is not used: the later read sees it)."""

    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(4, 4, 3, padding=1)
        self.relu = torch.nn.ReLU(inplace=True)

    def forward(self, x):
        out = self.relu(self.conv(x))
        out += x
        y = self.conv(out)
        y.relu_()
        return y * 2, out


def test_in_place_operators_become_their_functional_twins_without_tracing_again():
    torch.manual_seed(0)
    model = InPlace().eval()
    x = torch.randn(1, 4, 6, 6)
    ep = torch.export.export(model, (x,))
    assert any(n.target._schema.is_mutable for n in ep.graph.nodes if n.op == "call_function"
               and isinstance(n.target, torch._ops.OpOverload))
    functional = autograph.export.aten_import.functional(ep)
    assert functional is not None
    targets = [n.target for n in functional.graph.nodes if n.op == "call_function"]
    assert not any(t._schema.is_mutable for t in targets if isinstance(t, torch._ops.OpOverload))
    assert torch.ops.aten.relu.default in targets and torch.ops.aten.add.Tensor in targets
    with torch.no_grad():
        want = model(x.clone())
    for got, w in zip(functional.module()(x), want):
        assert torch.equal(got, w)
    # The user's program is left as it was.
    assert any(n.target._schema.is_mutable for n in ep.graph.nodes if n.op == "call_function"
               and isinstance(n.target, torch._ops.OpOverload))
    optimized, _ = autograph.optimize(ep, method="nimble", inductor=False, openvino=False, onnxruntime=False)
    for got, w in zip(optimized.module()(x), want):
        _close(got, w)


def test_a_write_into_a_view_is_left_to_run_decompositions():
    class ViewWrite(torch.nn.Module):
        def forward(self, x):
            y = x * 2
            y[:, :2].relu_()
            return y

    x = torch.randn(3, 4)
    ep = torch.export.export(ViewWrite(), (x,))
    assert autograph.export.aten_import.functional(ep) is None
    optimized, _ = autograph.optimize(ep, method="sequential", inductor=False, openvino=False, onnxruntime=False)
    _close(optimized.module()(x), ViewWrite()(x))


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device (scripts/gpu_quick_check.sh)")
@pytest.mark.parametrize("inductor", [False, True])
def test_export_path_on_cuda_merges_rewrites_in_place_and_runs_on_streams(inductor):
    """The export path's CUDA side: merge stages built from the program's CUDA weights (IOS on the
    H100 roofline, whose plan does not hang on this GPU's timings: measured, the H100 ran the small
    siblings side by side instead), in-place operators as functional twins on several streams
    (Nimble), and autograph's own search with Inductor parts compiled beside it. TF32 off, so that a merged kernel differs from the separate
    ones only by the order of its sums: 1e-4 of the output's scale (cuDNN picks other algorithms for the
    wider convolution than for the narrow ones, each within float32 rounding of the exact result)."""
    tf32 = torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32
    torch.backends.cudnn.allow_tf32 = torch.backends.cuda.matmul.allow_tf32 = False
    try:
        torch.manual_seed(0)
        cases = [(Siblings(), (torch.randn(2, 16, 7, 7), torch.randn(2, 5, 32)), "ios",
                  dict(cost="analytical", device_model="h100")),
                 (InPlace(), (torch.randn(1, 4, 6, 6),), "nimble", {}),
                 (Inception(), (torch.randn(2, 8, 12, 12),), "autograph", {})]
        for model, inputs, method, options in cases:
            model = model.cuda().eval()
            inputs = tuple(t.cuda() for t in inputs)
            with torch.no_grad():
                want = model(*(t.clone() for t in inputs))
            optimized, report = autograph.optimize(model, inputs, ir="export", method=method, inductor=inductor,
                                                   **options)
            assert report["device"].startswith("cuda"), report
            # With Inductor's candidates beside it, a compiled part may win the contest (measured faster:
            # Inductor fused the siblings itself): then the kept schedule has the part, not the merge.
            kept = (report.get("contest") or {}).get("kept", "aten")
            if method == "ios" and kept.startswith("aten"):
                assert any(s["strategy"] == "merge" for s in report["schedule"]["stages"]), report["schedule"]
            if method == "ios" and not inductor:
                assert kept.startswith("aten"), report.get("contest")
            if method == "nimble":
                assert report["streams"] >= 1
            got = optimized.module()(*inputs)
            torch.cuda.synchronize()
            for g, w in zip(got if isinstance(got, (tuple, list)) else [got],
                            want if isinstance(want, (tuple, list)) else [want]):
                assert g.is_cuda
                _close(g, w, tol=1e-4)
    finally:
        torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32 = tf32
