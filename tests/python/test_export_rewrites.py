"""Rewrites of an ExportedProgram before import (python/autograph/export/rewrites.py): numbers read off the
weights computed once, BatchNorm folded into convolutions and linears, and conv2d (+ add) + relu as cuDNN's
fused operators.

Tolerance of the fold: float32 rounds each product and sum to 2^-24 of its size; the folded program
multiplies the norm's scale into the weight before the convolution's sums instead of after them, so an
output of K products moves by about sqrt(K) * 2^-24 of the sums' scale (K <= 108 here: ~1e-6). The bound
is 1e-5 of the output's largest magnitude; a wrong fold (a scale on the wrong channel, a dropped mean)
moves outputs by order 1. The norms get running statistics away from their defaults (mean 0, variance
1), else a fold that ignored them would pass."""
import pytest
import torch

import autograph
from autograph.export.rewrites import (fold_batchnorm, fold_weight_scalars, fuse_conv_relu_cudnn,
                                       rewrite_conv_relu_cudnn)

TOL = 1e-5
aten = torch.ops.aten
_NORMS = (aten.batch_norm.default, aten._native_batch_norm_legit_no_training.default, aten.native_batch_norm.default)


def _close(got, want, tol=TOL):
    assert got.shape == want.shape and got.dtype == want.dtype
    assert (got - want).abs().max().item() <= tol * max(want.abs().max().item(), 1e-12)


def _with_statistics(model: torch.nn.Module) -> torch.nn.Module:
    """`model` in eval mode, each norm with running statistics and affine parameters away from 0 and 1."""
    torch.manual_seed(1)
    for m in model.modules():
        if isinstance(m, torch.nn.modules.batchnorm._BatchNorm):
            m.running_mean.uniform_(-1, 1)
            m.running_var.uniform_(0.5, 2)
            if m.affine:
                m.weight.data.uniform_(0.5, 2)
                m.bias.data.uniform_(-1, 1)
    return model.eval()


def _targets(ep):
    return [n.target for n in ep.graph.nodes if n.op == "call_function"]


def _norms(ep) -> int:
    return sum(t in _NORMS for t in _targets(ep))


def _getitems(ep) -> int:
    return sum("getitem" in str(t) for t in _targets(ep))


class EveryKind(torch.nn.Module):
    """A convolution of each dims, grouped, without bias, transposed, and a linear, each before a norm."""

    def __init__(self):
        super().__init__()
        self.c1 = torch.nn.Conv1d(4, 6, 3, groups=2)
        self.n1 = torch.nn.BatchNorm1d(6)
        self.c2 = torch.nn.Conv2d(3, 8, 3, padding=1, bias=False)
        self.n2 = torch.nn.BatchNorm2d(8)
        self.t2 = torch.nn.ConvTranspose2d(8, 4, 2, stride=2)
        self.nt = torch.nn.BatchNorm2d(4, affine=False)
        self.c3 = torch.nn.Conv3d(2, 4, 2)
        self.n3 = torch.nn.BatchNorm3d(4)
        self.fc = torch.nn.Linear(5, 7)
        self.nf = torch.nn.BatchNorm1d(7)

    def forward(self, a, b, c, d):
        y = self.nt(self.t2(torch.relu(self.n2(self.c2(b)))))
        return self.n1(self.c1(a)), y, self.n3(self.c3(c)), self.nf(self.fc(d))


def _every_kind():
    inputs = (torch.randn(2, 4, 10), torch.randn(1, 3, 6, 6), torch.randn(1, 2, 4, 4, 4), torch.randn(3, 5))
    return _with_statistics(EveryKind()), inputs


@pytest.mark.parametrize("decomposed", [False, True], ids=["training_ir", "functional_aten"])
def test_every_kind_of_convolution_and_linear_folds(decomposed):
    model, inputs = _every_kind()
    ep = torch.export.export(model, inputs)
    if decomposed:  # the norms as _native_batch_norm_legit_no_training and its getitems
        ep = ep.run_decompositions({})
    assert _norms(ep) == 5
    graph_before, state_before = str(ep.graph), {k: v.clone() for k, v in ep.state_dict.items()}
    folded = fold_batchnorm(ep)
    assert _norms(folded) == 0 and _getitems(folded) == 0
    with torch.no_grad():
        for got, want in zip(folded.module()(*inputs), model(*inputs)):
            _close(got, want)
    # The caller's program is as it was: graph, tensors and their values.
    assert str(ep.graph) == graph_before and set(ep.state_dict) == set(state_before)
    assert all(torch.equal(ep.state_dict[k], v) for k, v in state_before.items())
    # The folded weights are new buffers of the convolution's dtype and device; the originals are gone.
    assert "c2.weight_folded" in folded.state_dict and "c2.weight" not in folded.state_dict
    for name in ("c1", "c2", "t2", "c3", "fc"):
        original = ep.state_dict[f"{name}.weight"]
        new = folded.state_dict[f"{name}.weight_folded"]
        assert new.dtype == original.dtype and new.device == original.device and new.shape == original.shape
    assert fold_batchnorm(folded) is folded  # nothing left to fold: the same program


def test_double_weights_stay_double():
    model = _with_statistics(torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3), torch.nn.BatchNorm2d(4))).double()
    x = torch.randn(1, 3, 6, 6, dtype=torch.float64)
    folded = fold_batchnorm(torch.export.export(model, (x,)))
    assert _norms(folded) == 0 and folded.state_dict["0.weight_folded"].dtype == torch.float64
    _close(folded.module()(x), model(x).detach(), tol=1e-12)


class Shared(torch.nn.Module):
    """One convolution's weight read by three convolutions: two before norms of their own, one not."""

    def __init__(self, third: bool):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 4, 3, padding=1)
        self.n1, self.n2 = torch.nn.BatchNorm2d(4), torch.nn.BatchNorm2d(4)
        self.third = third

    def forward(self, x):
        y = self.n1(self.conv(x)) + self.n2(self.conv(x * 2))
        return y + self.conv(x - 1) if self.third else y


@pytest.mark.parametrize("third", [False, True], ids=["each_read_folds", "one_read_unfolded"])
def test_a_shared_weight_folds_into_new_weights(third):
    model = _with_statistics(Shared(third))
    x = torch.randn(1, 3, 6, 6)
    ep = torch.export.export(model, (x,))
    weight = ep.state_dict["conv.weight"].clone()
    folded = fold_batchnorm(ep)
    assert _norms(folded) == 0
    assert {"conv.weight_folded", "conv.weight_folded_1"} <= set(folded.state_dict)
    # The unfolded convolution still reads the original weight, unchanged.
    assert ("conv.weight" in folded.state_dict) == third
    assert torch.equal(ep.state_dict["conv.weight"], weight)
    _close(folded.module()(x), model(x).detach())


def test_a_convolution_read_elsewhere_keeps_its_norm():
    class Residual(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.conv, self.norm = torch.nn.Conv2d(4, 4, 3, padding=1), torch.nn.BatchNorm2d(4)
            self.deep = torch.nn.Sequential(torch.nn.Conv2d(4, 4, 1), torch.nn.BatchNorm2d(4))

        def forward(self, x):
            y = self.conv(x)
            return self.norm(y) + y, self.deep(x)

    model = _with_statistics(Residual())
    x = torch.randn(1, 4, 5, 5)
    folded = fold_batchnorm(torch.export.export(model, (x,)))
    assert _norms(folded) == 1  # the residual's norm stays, the other folds
    for got, want in zip(folded.module()(x), model(x)):
        _close(got, want.detach())


def test_grouped_transposed_convolution_keeps_its_norm():
    model = _with_statistics(torch.nn.Sequential(torch.nn.ConvTranspose2d(4, 6, 2, groups=2), torch.nn.BatchNorm2d(6)))
    x = torch.randn(1, 4, 5, 5)
    ep = torch.export.export(model, (x,))
    assert fold_batchnorm(ep) is ep


class Block(torch.nn.Module):
    """ResNet's basic block: conv + norm + relu (in place, as torchvision's), conv + norm + residual add
    + relu."""

    def __init__(self):
        super().__init__()
        self.c1, self.n1 = torch.nn.Conv2d(4, 4, 3, padding=1, bias=False), torch.nn.BatchNorm2d(4)
        self.c2, self.n2 = torch.nn.Conv2d(4, 4, 3, padding=1, bias=False), torch.nn.BatchNorm2d(4)

    def forward(self, x):
        return torch.relu(self.n2(self.c2(torch.relu_(self.n1(self.c1(x))))) + x)


def test_optimize_folds_and_leaves_the_callers_program_alone():
    model = _with_statistics(torch.nn.Sequential(Block(), Block()))
    x = torch.randn(1, 4, 8, 8)
    ep = torch.export.export(model, (x,))
    graph_before, state_before = str(ep.graph), {k: v.clone() for k, v in ep.state_dict.items()}
    optimized, report = autograph.optimize(ep, method="sequential", inductor=False, openvino=False, onnxruntime=False)
    assert str(ep.graph) == graph_before and all(torch.equal(ep.state_dict[k], v) for k, v in state_before.items())
    (call,) = [n for n in optimized.graph.nodes if n.target == torch.ops.autograph.execute.default]
    assert "batch_norm" not in call.args[1] and "conv2d" in call.args[1]
    _close(optimized.module()(x), model(x).detach())
    # An nn.Module that autograph exports itself folds alike.
    optimized, _ = autograph.optimize(model, (x,), ir="export", method="sequential", inductor=False, openvino=False, onnxruntime=False)
    (call,) = [n for n in optimized.graph.nodes if n.target == torch.ops.autograph.execute.default]
    assert "batch_norm" not in call.args[1]
    _close(optimized.module()(x), model(x).detach())


def test_dynamic_shapes_plan_and_run_other_shapes_on_the_folded_program():
    model = _with_statistics(Block())
    x = torch.randn(2, 4, 6, 6)
    ep = torch.export.export(model, (x,), dynamic_shapes=({0: torch.export.Dim("batch", min=1, max=8)},))
    optimized, report = autograph.optimize(ep, method="sequential", inductor=False, openvino=False, onnxruntime=False)
    assert report["dynamic_shapes"]["other_shapes"] == "aten"
    (call,) = [n for n in optimized.graph.nodes if n.target == torch.ops.autograph.execute.default]
    assert "batch_norm" not in call.args[1]  # neither in the plan nor in the graph for other shapes
    for batch in (2, 5):
        x = torch.randn(batch, 4, 6, 6)
        _close(optimized.module()(x), model(x).detach())


class WeightScalars(torch.nn.Module):
    """Numbers read off its weights, which torch.export leaves to run time: a roll's shift (a pitch
    model's calibration offset), a scale, and a length with the checks export asks for."""

    def __init__(self):
        super().__init__()
        self.register_buffer("shift", torch.tensor(0.7))
        self.register_buffer("length", torch.tensor(5))
        self.scale = torch.nn.Parameter(torch.tensor(1.5))
        self.lin = torch.nn.Linear(8, 8)

    def forward(self, x):
        y = torch.roll(self.lin(x), round(self.shift.item() * 3), -1) * self.scale.item()
        k = self.length.item()
        torch._check(k >= 0)
        torch._check(k <= x.shape[-1])
        return y.narrow(-1, 0, k) + 1


_SYMBOLIC = (torch.SymInt, torch.SymFloat, torch.SymBool)


def test_numbers_read_off_the_weights_become_constants():
    torch.manual_seed(0)
    model, x = WeightScalars().eval(), torch.randn(2, 8)
    ep = torch.export.export(model, (x,))
    graph_before = str(ep.graph)
    folded = fold_weight_scalars(ep)
    assert str(ep.graph) == graph_before and ep.range_constraints  # the caller's program stays as it was
    assert not any(isinstance(n.meta.get("val"), _SYMBOLIC) for n in folded.graph.nodes)
    assert not folded.range_constraints
    calls = {n.target: n for n in folded.graph.nodes if n.op == "call_function"}
    assert aten.item.default not in calls and aten._assert_scalar.default not in calls
    assert calls[aten.roll.default].args[1] == [2] and calls[aten.narrow.default].args[3] == 5
    assert calls[aten.mul.Tensor].args[1] == 1.5
    assert list(calls[aten.add.Tensor].meta["val"].shape) == [2, 5]  # sizes computed again: static now
    assert {s.target for s in folded.graph_signature.input_specs if s.target} == {"lin.weight", "lin.bias"}
    _close(folded.module()(x), model(x).detach())
    assert fold_weight_scalars(folded) is folded


def test_the_export_path_plans_a_program_that_reads_numbers_off_its_weights():
    torch.manual_seed(0)
    model, x = WeightScalars().eval(), torch.randn(2, 8)
    ep = torch.export.export(model, (x,), dynamic_shapes=({0: torch.export.Dim("batch", min=1, max=8)},))
    optimized, report = autograph.optimize(ep, method="sequential", inductor=False, openvino=False, onnxruntime=False)
    for batch in (2, 5):  # the example's shape (the plan) and another (the program's own graph)
        x = torch.randn(batch, 8)
        _close(optimized.module()(x), model(x).detach())


def test_a_number_read_off_the_inputs_is_refused_with_what_and_where_to_go():
    class ScaledByItsMax(torch.nn.Module):
        def forward(self, x):
            return x * x.max().item()
    x = torch.randn(2, 8)
    ep = torch.export.export(ScaledByItsMax(), (x,))
    assert fold_weight_scalars(ep) is ep  # not from the weights: stays
    with pytest.raises(autograph.UnsupportedModelError, match=r"number from its inputs' values.*TorchScript path"):
        autograph.optimize(ep, method="sequential", inductor=False, openvino=False, onnxruntime=False)


class ConvRelus(torch.nn.Module):
    """What fuses (conv + relu, conv + bias + add + relu either way round) and what does not (a 1-d
    convolution, a convolution read twice, an add that broadcasts)."""

    def __init__(self):
        super().__init__()
        self.a = torch.nn.Conv2d(4, 4, 3, padding=1)
        self.b = torch.nn.Conv2d(4, 4, 3, padding=1, bias=False)
        self.c = torch.nn.Conv2d(4, 4, 1, groups=2)
        self.d = torch.nn.Conv2d(4, 4, 1)
        self.e = torch.nn.Conv2d(4, 4, 1)
        self.one = torch.nn.Conv1d(4, 4, 1)

    def forward(self, x, s):
        y = torch.relu(self.a(x))              # conv + bias + relu
        y = torch.relu(self.b(y) + x)          # conv + add + relu
        y = torch.relu(y + self.c(y))          # the convolution second in the add
        d = self.d(y)
        y = torch.relu(d) + d                  # read twice: stays
        y = torch.relu(self.e(y) + s)          # a broadcast add: stays
        return y, torch.relu(self.one(y.flatten(2)))


def _conv_relus():
    torch.manual_seed(0)
    return ConvRelus().eval(), (torch.randn(1, 4, 6, 6), torch.randn(1, 4, 1, 1))


def test_conv_relu_rewrite_on_the_graph():
    model, inputs = _conv_relus()
    ep = torch.export.export(model, inputs).run_decompositions({})
    assert fuse_conv_relu_cudnn(ep, "cpu") is ep  # no cuDNN there
    fused = rewrite_conv_relu_cudnn(ep)
    targets = _targets(fused)
    assert targets.count(aten.cudnn_convolution_relu.default) == 1
    assert targets.count(aten.cudnn_convolution_add_relu.default) == 2
    assert targets.count(aten.conv2d.default) == 2 and targets.count(aten.conv1d.default) == 1
    assert targets.count(aten.relu.default) == 3
    (first,) = [n for n in fused.graph.nodes if n.target is aten.cudnn_convolution_relu.default]
    assert first.args[2] is not None  # the convolution's bias goes with it
    assert _targets(ep).count(aten.relu.default) == 6  # the caller's program is unchanged
    double = torch.export.export(model.double(), tuple(t.double() for t in inputs)).run_decompositions({})
    assert rewrite_conv_relu_cudnn(double) is double  # cuDNN's fused kernels take float32 and float16 only


def test_an_unbatched_convolution_is_not_rewritten():
    """conv2d takes an unbatched 3-d input too; cuDNN's fused kernels take batched 4-d inputs only."""
    class Unbatched(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = torch.nn.Conv2d(4, 4, 3, padding=1)

        def forward(self, x):
            return torch.relu(self.conv(x))

    ep = torch.export.export(Unbatched().eval(), (torch.randn(4, 6, 6),)).run_decompositions({})
    assert rewrite_conv_relu_cudnn(ep) is ep


@pytest.mark.skipif(not torch.cuda.is_available(), reason="cuDNN's fused operators run on CUDA only")
def test_conv_relu_rewrite_runs_on_cuda():
    # TF32 off: the fused and unfused kernels then both sum in float32, whatever algorithms cuDNN picks
    # (bound: as the fold's, 1e-5 of the output's scale, with K = 36 products per output).
    model, inputs = _conv_relus()
    model, inputs = model.cuda(), tuple(t.cuda() for t in inputs)
    ep = torch.export.export(model, inputs).run_decompositions({})
    fused = fuse_conv_relu_cudnn(ep, "cuda")
    assert aten.cudnn_convolution_add_relu.default in _targets(fused)
    tf32 = torch.backends.cudnn.allow_tf32
    torch.backends.cudnn.allow_tf32 = False
    try:
        with torch.no_grad():
            for got, want in zip(fused.module()(*inputs), model(*inputs)):
                _close(got, want)
    finally:
        torch.backends.cudnn.allow_tf32 = tf32


def _stand_in_fusion(monkeypatch):
    """export_rewrites.fuse_conv_relu_cudnn replaced by a rewrite that also runs on CPU (relu as
    clamp_min(0): another graph of the same function), so that the plan it gives competes here as
    "aten_cudnn" does on CUDA; candidates timed by stand-in medians (by name)."""
    from autograph import export as export_module
    from autograph.export import rewrites as export_rewrites

    def clamped(ep, device):
        edit = export_rewrites._Editable(ep)
        for node in edit.graph.nodes:
            if node.op == "call_function" and node.target is aten.relu.default:
                node.target, node.args = aten.clamp_min.default, (node.args[0], 0.0)
        return edit.finish()

    monkeypatch.setattr(export_module.candidates, "fuse_conv_relu_cudnn", clamped)
    monkeypatch.setattr(export_module.contest, "_time_candidates",
                        lambda candidates, tensors, graph, rounds=10, **_: {n: 1.0 if n == "aten_cudnn" else 2.0
                                                                      for n in candidates})


@pytest.mark.parametrize("inductor", [False, True])
def test_the_fused_plan_competes_with_the_plan_and_is_kept_where_it_measures_faster(monkeypatch, inductor):
    _stand_in_fusion(monkeypatch)
    model, inputs = _conv_relus()
    optimized, report = autograph.optimize(model, inputs, ir="export", method="sequential", inductor=inductor,
                                           openvino=False, onnxruntime=False)
    contest = report["inductor"]
    assert contest["kept"] == "aten_cudnn", contest
    assert contest["candidates"]["aten_cudnn"]["median_ms"] == 1.0 and contest["dropped"]["aten"]["why"] == "slower"
    assert report["chosen"].startswith("aten with cuDNN's fused conv+relu")
    (call,) = [n for n in optimized.graph.nodes if n.target == torch.ops.autograph.execute.default]
    assert "clamp_min" in call.args[1] and "aten::relu\"" not in call.args[1]
    with torch.no_grad():
        for got, want in zip(optimized.module()(*inputs), model(*inputs)):
            _close(got, want)
    # Measured rewrites off: nothing competes, the plan is kept as planned.
    _, report = autograph.optimize(model, inputs, ir="export", method="sequential", inductor=False, openvino=False, onnxruntime=False,
                                   check_rewrites=False)
    assert "inductor" not in report or report["inductor"]["kept"] != "aten_cudnn"


def test_each_listed_shape_s_plan_gets_the_fused_candidate_too(monkeypatch):
    """A plan of its own for a listed shape (option shapes) is chosen as the example's is: the fused
    plan competes there too, and is kept where it measures faster."""
    _stand_in_fusion(monkeypatch)
    model, _ = _conv_relus()
    inputs = (torch.randn(2, 4, 6, 6), torch.randn(2, 4, 1, 1))  # a batch of 1 would be specialized
    batch = torch.export.Dim("batch", min=1, max=8)
    ep = torch.export.export(model, inputs, dynamic_shapes=({0: batch}, {0: batch}), strict=False)
    optimized, report = autograph.optimize(ep, method="sequential", inductor=False, openvino=False, onnxruntime=False,
                                           shapes=[[(4, 4, 6, 6), (4, 4, 1, 1)]])
    assert report["inductor"]["kept"] == "aten_cudnn"
    (line,) = report["shape_plans"]
    assert line["kept"] == "aten_cudnn", line
    with torch.no_grad():
        for n in (4, 2, 3):
            xs = (torch.randn(n, 4, 6, 6), torch.randn(n, 4, 1, 1))
            for got, want in zip(optimized.module()(*xs), model(*xs)):
                _close(got, want)
