"""The optimized program's small weights packed into one tensor per dtype (export/packed_weights.py,
csrc/executor/packed_weights.h): fewer tensors per call, the same outputs, saved and loaded, written in
place, and bad packed tensors refused with a clear error. Tolerance 1e-5 of the output's scale: the
packed weights are exact copies, so the program computes what it computed unpacked (ATen's kernels on
float32; only the order of sums inside a kernel may differ)."""
import copy
import json

import pytest
import torch

import autograph
from autograph.export import optimize as optimize_module
from autograph.export.packed_weights import PACKED_ALIGN_BYTES, PACKED_MAX_BYTES, packed

TOL = 1e-5
OPTIONS = dict(inductor=False, openvino=False, onnxruntime=False)


class ManySmall(torch.nn.Module):
    """Thirty small convolutions (sixty small weights) and one linear layer over a weight larger than
    PACKED_MAX_BYTES."""

    def __init__(self):
        super().__init__()
        self.convs = torch.nn.ModuleList(torch.nn.Conv2d(4, 4, 3, padding=1) for _ in range(30))
        self.big = torch.nn.Linear(4 * 8 * 8, 5000, bias=False)
        assert self.big.weight.numel() * 4 > PACKED_MAX_BYTES

    def forward(self, x):
        for c in self.convs:
            x = torch.relu(c(x))
        return self.big(x.flatten(1))


def _close(got, want, tol=TOL):
    assert got.shape == want.shape and got.dtype == want.dtype
    assert (got - want).abs().max().item() <= tol * max(want.abs().max().item(), 1e-12)


def _call(optimized):
    (node,) = [n for n in optimized.graph.nodes if n.target == torch.ops.autograph.execute.default]
    return node


@pytest.fixture(scope="module")
def optimized():
    torch.manual_seed(0)
    model = ManySmall().eval()
    x = torch.randn(1, 4, 8, 8)
    ep = torch.export.export(model, (x,), strict=False)
    optimized, _ = autograph.optimize(ep, **OPTIONS)
    return model, x, ep, optimized


def test_many_small_weights_pass_as_one_packed_tensor_and_compute_the_same(optimized, tmp_path):
    model, x, _, program = optimized
    tensors = list(program.state_dict.values())
    # The sixty small float32 weights as one tensor, the large one on its own: two tensors per call.
    assert len(tensors) == 2, [t.shape for t in tensors]
    pack = max(tensors, key=lambda t: t.dim() == 1)
    assert pack.dim() == 1 and pack.data_ptr() % PACKED_ALIGN_BYTES == 0
    body = json.loads(_call(program).args[1].split("\n", 1)[1])
    (group,) = body["packed_weights"]["groups"]
    assert group["dtype"] == "Float" and len(group["members"]) == 60
    assert all(offset * 4 % PACKED_ALIGN_BYTES == 0 for _, offset, _, _ in group["members"])
    with torch.no_grad():
        want = model(x)
    _close(program.module()(x), want)
    path = tmp_path / "packed.pt2"
    torch.export.save(program, str(path))
    _close(torch.export.load(str(path)).module()(x), want)


def test_a_packed_weight_written_in_place_is_seen_by_the_next_run(optimized):
    model, x, _, _ = optimized
    # A model of its own: the weights not packed are the model's own tensors, written here too.
    model = copy.deepcopy(model)
    halved = copy.deepcopy(model)
    with torch.no_grad():
        for p in halved.parameters():
            p.mul_(0.5)
        want = halved(x)
    program, _ = autograph.optimize(torch.export.export(model, (x,), strict=False), **OPTIONS)
    module = program.module()
    module(x)  # the views are made
    with torch.no_grad():
        for t in program.state_dict.values():
            if t.dim() == 1:  # the packed weights; the large one is the model's own
                t.mul_(0.5)
        model.big.weight.mul_(0.5)
    _close(module(x), want)


def test_the_unpacked_call_and_the_packed_call_run_the_same_program(optimized, monkeypatch):
    _, x, ep, _ = optimized
    kept = {}

    def unpacked(program, weights):  # what the contest calls: every weight on its own
        kept["program"], kept["weights"] = program, list(weights)
        return program, list(weights)

    monkeypatch.setattr(optimize_module, "packed", unpacked)
    autograph.optimize(ep, **OPTIONS)
    text, passed = packed(kept["program"], kept["weights"])
    assert len(passed) == 2 and len(kept["weights"]) == 61
    (want,) = torch.ops.autograph.execute(kept["weights"] + [x], kept["program"])
    (got_packed,) = torch.ops.autograph.execute(passed + [x], text)
    (got_unpacked,) = torch.ops.autograph.execute(kept["weights"] + [x], text)
    _close(got_packed, want)
    _close(got_unpacked, want)

    # A packed tensor of another dtype, or one too short, is refused by name.
    pack = passed[0] if passed[0].dim() == 1 else passed[1]
    others = [t for t in passed if t is not pack]
    with pytest.raises(ValueError, match=r"tensor 0 \(packed weights\) must be a contiguous 1-d Float tensor"):
        torch.ops.autograph.execute([pack.double()] + others + [x], text)
    with pytest.raises(ValueError, match=r"too few for the weights it packs"):
        torch.ops.autograph.execute([pack[:10]] + others + [x], text)
    # The user's tensor is named by its place in the packed call.
    with pytest.raises(ValueError, match=r"tensor 2 \(an input\) is \[4,8,8\] Float"):
        torch.ops.autograph.execute([pack] + others + [x[0]], text)


def test_a_packing_that_names_a_users_input_is_a_corrupted_program(optimized, monkeypatch):
    _, x, ep, _ = optimized
    kept = {}
    monkeypatch.setattr(optimize_module, "packed",
                        lambda program, weights: kept.setdefault("p", (program, list(weights))))
    autograph.optimize(ep, **OPTIONS)
    program, weights = kept["p"]
    user = len(weights)  # the user's tensor comes after the weights
    bad = {"groups": [{"dtype": "Float", "members": [[0, 0, [4], [1]], [user, 64, [4], [1]]]}]}
    with pytest.raises(RuntimeError, match="corrupted program: packed weight"):
        torch.ops.autograph.with_packed_weights(program, json.dumps(bad))
