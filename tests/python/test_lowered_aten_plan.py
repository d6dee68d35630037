"""The plan on ATen's kernels below float32 (rewrites.lower_precision, candidate "aten_bf16" /
"aten_fp16"): the exported program's matmuls and convolutions computing in the lower dtype as autocast
computes them, a weight that they alone read stored in it, everything else (and the program's inputs and
outputs) in float32; on CUDA it competes beside the other candidates (cuDNN and cuBLAS on tensor cores),
judged against option tolerance. On the CPU the candidate is exercised through a seam
(offers_aten_lowered): ATen's bf16 kernels run there too, slower than OpenVINO's.

Tolerances: bfloat16 keeps 8 significant bits (2^-8 = 3.9e-3 relative); this small network's outputs
move by about that much of their scale (a few 1e-3), so 0.05 admits them with room and 1e-5 (float32's
order) shows that something was lowered."""
import pytest
import torch

import autograph
from autograph.export.rewrites import lower_precision

aten = torch.ops.aten


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 8, 3, padding=1)
        self.head = torch.nn.Linear(8, 4)
        self.shift = torch.nn.Parameter(torch.randn(4))  # read by the linear's output sum: stays float32

    def forward(self, x):
        y = torch.relu(self.conv(x)).mean((2, 3))
        return torch.nn.functional.linear(y, self.head.weight, self.shift) + self.shift


@pytest.fixture(autouse=True)
def cache(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("AUTOGRAPH_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "lowered-aten-cache"))


def _net():
    torch.manual_seed(0)
    model, x = Net().eval(), torch.randn(1, 3, 12, 12)
    with torch.no_grad():
        want = model(x)
    return model, x, want


def _error(got, want):
    return ((got - want).abs().max() / want.abs().max()).item()


def test_lower_precision_lowers_matmuls_and_convolutions_and_stores_their_own_weights_lowered():
    model, x, want = _net()
    ep = torch.export.export(model, (x,)).run_decompositions({})
    lowered = lower_precision(ep, "bf16")
    dtypes = {name: t.dtype for name, t in lowered.state_dict.items()}
    assert dtypes["conv.weight_bf16"] == dtypes["conv.bias_bf16"] == dtypes["head.weight_bf16"] == torch.bfloat16
    assert dtypes["shift"] == torch.float32  # read by the sum too: cast per call, stored as it was
    assert "conv.weight" not in dtypes and "head.weight" not in dtypes  # nothing else read them
    casts = [n for n in lowered.graph.nodes if n.target is aten._to_copy.default]
    assert {n.kwargs["dtype"] for n in casts} == {torch.bfloat16, torch.float32}
    with torch.no_grad():
        got = lowered.module()(x)
    assert got.dtype == torch.float32 and 1e-5 < _error(got, want) <= 0.05
    assert {n.target for n in ep.graph.nodes if n.op == "call_function"}.isdisjoint({aten._to_copy.default})


def test_a_program_without_matmuls_or_convolutions_is_returned_as_it_was():
    class Plain(torch.nn.Module):
        def forward(self, x):
            return torch.relu(x) * 2

    ep = torch.export.export(Plain(), (torch.randn(3),)).run_decompositions({})
    assert lower_precision(ep, "bf16") is ep


def test_the_lowered_plan_competes_is_judged_kept_and_saved(monkeypatch, tmp_path):
    from autograph import export as export_module
    from autograph.export import candidates
    monkeypatch.setattr(candidates, "offers_aten_lowered", lambda device, settings: settings.precision == "bf16")
    monkeypatch.setattr(export_module.contest, "_time_candidates",
                        lambda c, tensors, graph, rounds=10, **_: {n: 1.0 if n == "aten_bf16" else 2.0 for n in c})
    model, x, want = _net()
    optimized, report = autograph.optimize(torch.export.export(model, (x,)), method="sequential", precision="bf16",
                                           tolerance=0.05, inductor=False, openvino=False, onnxruntime=False)
    contest = report["inductor"]
    assert contest["kept"] == "aten_bf16" and contest["candidates"]["aten_bf16"]["precision"] == "bf16"
    assert contest["precision"]["met"] == ["aten_bf16"] and contest["precision"]["kept"] == "bf16"
    assert report["chosen"].startswith("aten in bf16")
    with torch.no_grad():
        got = optimized.module()(x)
    assert got.dtype == torch.float32 and 1e-5 < _error(got, want) <= 0.05
    torch.export.save(optimized, tmp_path / "model.pt2")
    with torch.no_grad():
        assert torch.equal(torch.export.load(tmp_path / "model.pt2").module()(x), got)
    # Beyond the tolerance it is out, and float32's plan is kept.
    _, report = autograph.optimize(torch.export.export(model, (x,)), method="sequential", precision="bf16",
                                   tolerance=1e-6, inductor=False, openvino=False, onnxruntime=False)
    assert report["inductor"]["dropped"]["aten_bf16"]["why"] == "beyond tolerance"
    assert report["inductor"]["kept"] == "aten"
