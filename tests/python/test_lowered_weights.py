"""Inductor's candidate below float32 (export/compilers/lowered_module.py): the part's module with its
matmuls and convolutions in bf16 / fp16 as autocast computes them (their weights stored so, their results
cast back), the rest in float32, so the program keeps the user's dtypes; compiled as any part and kept
only within option tolerance.

Tolerances: bfloat16 keeps 8 significant bits (resolution 2^-8 = 3.9e-3); this small network's outputs
move by about that much of their scale, so 0.1 admits them with room and an error of 0 would mean nothing
was lowered."""
import pytest
import torch

import autograph
from autograph.export.compilers import inductor
from autograph.export.compilers.lowered_module import lowered_module
from cpu_features import cpu_has_bf16, needs_bf16_cpu


class Block(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 16, 3, padding=1)
        self.head = torch.nn.Linear(16, 10)

    def forward(self, x):
        y = torch.relu(self.conv(x)) + torch.ones(1, 16, 1, 1, device=x.device)
        return self.head(y.mean((2, 3)))


@pytest.fixture(autouse=True)
def cache(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("AUTOGRAPH_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "lowered-weights-cache"))


def _error(got, want):
    return ((got - want).abs().max() / want.abs().max()).item()


def _part_module(conv: torch.nn.Conv2d, x: torch.Tensor) -> torch.fx.GraphModule:
    """conv -> relu -> + a float32 tensor made inside -> mean, as a part's module is (PartBuilder.module_of):
    its weights buffers of the root module, its input a placeholder, each value's metadata as export's."""
    aten = torch.ops.aten
    root = torch.nn.Module()
    root.register_buffer("w0", conv.weight.detach())
    root.register_buffer("w1", conv.bias.detach())
    g = torch.fx.Graph()
    placeholder = g.placeholder("in0")
    c = g.call_function(aten.convolution.default, (placeholder, g.get_attr("w0"), g.get_attr("w1"), [1, 1], [1, 1],
                                                   [1, 1], False, [0, 0], 1))
    made = g.call_function(aten.full.default, ([1, conv.out_channels, 1, 1], 1.0), {"dtype": torch.float32})
    mean = g.call_function(aten.mean.dim, (g.call_function(aten.add.Tensor, (g.call_function(aten.relu.default, (c,)),
                                                                              made)), [2, 3]))
    g.output((mean, placeholder))  # the input returned as it is, too
    gm = torch.fx.GraphModule(root, g)
    _Recording(gm).run(x)
    return gm


class _Recording(torch.fx.Interpreter):
    """Runs a graph once, leaving each node's value in its metadata ("val"), as export's metadata has it."""

    def run_node(self, n):
        n.meta["val"] = super().run_node(n)
        return n.meta["val"]


def test_a_lowered_module_keeps_its_callers_dtypes_and_computes_in_the_lower_one():
    torch.manual_seed(0)
    conv, x = torch.nn.Conv2d(3, 16, 3, padding=1), torch.randn(1, 3, 8, 8)
    gm = _part_module(conv, x)
    want, _ = gm(x)
    lowered = lowered_module(gm, "bf16")
    assert [b.dtype for b in lowered.buffers()] == [torch.bfloat16] * 2  # read by the convolution alone
    conv = next(n for n in lowered.graph.nodes if n.target is torch.ops.aten.convolution.default)
    (back,) = conv.users  # the convolution's result back in float32 before the rest reads it
    assert back.target is torch.ops.aten._to_copy.default and back.kwargs["dtype"] == torch.float32
    full = next(n for n in lowered.graph.nodes if n.target is torch.ops.aten.full.default)
    assert full.kwargs["dtype"] == torch.float32  # the rest stays in float32
    got, passed = lowered(x)
    assert got.dtype == torch.float32 and 0 < _error(got, want) <= 0.1
    assert torch.equal(passed, x)  # not through bf16


def test_inductor_lowers_its_whole_graph_alone_to_what_the_device_computes_fast():
    cuda, cpu = torch.device("cuda"), torch.device("cpu")
    assert inductor.COMPILER.lowered(cuda, "fp16", "whole") == ["fp16"]
    assert inductor.COMPILER.lowered(cuda, "bf16", "whole") == ["bf16"]
    assert inductor.COMPILER.lowered(cuda, "bf16", "plan") == [] == inductor.COMPILER.lowered(cuda, "fp32", "whole")
    assert inductor.COMPILER.lowered(cpu, "fp16", "whole") == []
    assert inductor.COMPILER.lowered(cpu, "bf16", "whole") == (["bf16"] if cpu_has_bf16() else [])


def test_fp16_on_cpu_lowers_nothing_and_the_report_says_so():
    torch.manual_seed(0)
    model, x = Block().eval(), torch.randn(1, 3, 8, 8)
    _, report = autograph.optimize(torch.export.export(model, (x,)), method="sequential", precision="fp16")
    precision = report["inductor"]["precision"]
    assert precision["lowered"] == [] and precision["kept"] == "fp32" and "fp16 on cpu" in precision["note"]


@needs_bf16_cpu
def test_inductors_bf16_candidate_is_kept_within_the_tolerance_and_saved_with_it(monkeypatch, tmp_path):
    from autograph import export as export_module
    monkeypatch.setattr(export_module.contest, "_time_candidates",
                        lambda candidates, tensors, graph, rounds=10, **_:
                        {n: 1.0 if n == "whole_bf16" else 2.0 for n in candidates})
    torch.manual_seed(0)
    model, x = Block().eval(), torch.randn(1, 3, 8, 8)
    with torch.no_grad():
        want = model(x)
    optimized, report = autograph.optimize(torch.export.export(model, (x,)), method="sequential",
                                           precision="bf16", tolerance=0.1, openvino=False, onnxruntime=False)
    contest = report["inductor"]
    assert contest["kept"] == "whole_bf16" and contest["candidates"]["whole_bf16"]["precision"] == "bf16"
    assert report["chosen"].startswith("inductor whole in bf16")
    with torch.no_grad():
        got = optimized.module()(x)
    assert got.dtype == torch.float32 and 0 < _error(got, want) <= 0.1
    torch.export.save(optimized, tmp_path / "model.pt2")  # the package computes in bf16 itself
    with torch.no_grad():
        assert torch.equal(torch.export.load(tmp_path / "model.pt2").module()(x), got)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device (scripts/gpu_quick_check.sh)")
@pytest.mark.parametrize("precision", ["bf16", "fp16"])
def test_inductors_lowered_candidate_on_cuda_is_kept_within_the_tolerance_beside_the_tf32_twins(
        monkeypatch, tmp_path, precision):
    from autograph import export as export_module
    lowered = f"whole_{precision}"
    monkeypatch.setattr(export_module.contest, "_time_candidates",
                        lambda candidates, tensors, graph, rounds=10, **_:
                        {n: 1.0 if n == lowered else 2.0 for n in candidates})
    torch.manual_seed(0)
    model, x = Block().eval().cuda(), torch.randn(1, 3, 8, 8, device="cuda")
    with torch.no_grad():
        want = model(x)
    optimized, report = autograph.optimize(torch.export.export(model, (x,)), method="sequential",
                                           precision=precision, tolerance=0.1)
    contest = report["inductor"]
    assert contest["kept"] == lowered and contest["candidates"][lowered]["precision"] == precision
    assert "aten_tf32" in contest["precision"]["met"]  # the TF32 twins competed (and lost on time)
    with torch.no_grad():
        got = optimized.module()(x)
    assert got.dtype == torch.float32 and 0 < _error(got, want) <= 0.1
    torch.export.save(optimized, tmp_path / "model.pt2")
    with torch.no_grad():
        assert _error(torch.export.load(tmp_path / "model.pt2").module()(x), got) <= 1e-6
