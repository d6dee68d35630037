"""Models whose forward takes or returns structures (dicts, nested tuples, None, plain numbers) go
through `autograph optimize` (inputs described with --inputs in NAME.json's format), save, load in
Python and match the original."""
import json
from typing import Dict
import subprocess

import pytest
import torch

import autograph
from models import hf_style_bert


def optimize(cli, model, out, *extra):
    r = subprocess.run([cli, "optimize", str(model), "-o", str(out), "--json", *extra],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def assert_same(got, want, where="output"):
    """Same structure and types; tensors within 1e-4 of the output's scale (float32 rounding of
    reordered sums through a few layers)."""
    assert type(got) is type(want), f"{where}: {type(got)} vs {type(want)}"
    if isinstance(want, torch.Tensor):
        scale = max(1.0, want.abs().max().item())
        assert got.shape == want.shape and (got - want).abs().max().item() <= 1e-4 * scale, where
    elif isinstance(want, dict):
        assert list(got) == list(want), where
        for k in want:
            assert_same(got[k], want[k], f"{where}[{k!r}]")
    elif isinstance(want, (tuple, list)):
        assert len(got) == len(want), where
        for i, (g, w) in enumerate(zip(got, want)):
            assert_same(g, w, f"{where}[{i}]")
    else:
        assert got == want, where


@pytest.mark.parametrize("method", ["autograph", "nimble"])
def test_traced_hugging_face_style_bert_returning_a_dict(cli, tmp_path, method):
    model = hf_style_bert.traced()
    model.save(str(tmp_path / "bert.pt"))
    spec = {"inputs": [{"shape": [1, 16], "dtype": "int64", "high": 1000},
                       {"shape": [1, 16], "dtype": "int64", "high": 2},
                       {"shape": [1, 16], "dtype": "int64", "high": 2}]}
    (tmp_path / "bert.json").write_text(json.dumps(spec))
    report = optimize(cli, tmp_path / "bert.pt", tmp_path / "opt.pt", "--method", method)
    assert report["operators_after"] > 0 and report["fallback"] is None
    assert report["operators_optimized"] > 0 and report["left_to_torchscript"] == []
    autograph.load_library()
    optimized = torch.jit.load(str(tmp_path / "opt.pt"))
    with torch.no_grad():
        for seed in (0, 1):
            inputs = hf_style_bert.example_inputs(seed=seed)
            out = optimized(*inputs)
            assert set(out) == {"last_hidden_state", "pooler_output"}
            assert_same(out, model(*inputs))


class DictAndNested(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.a = torch.nn.Linear(8, 8)
        self.b = torch.nn.Linear(8, 8)

    def forward(self, batch: Dict[str, torch.Tensor], scale: float, steps: int):
        x = batch["x"]
        h = torch.relu(self.a(x)) * scale
        g = torch.sigmoid(self.b(batch["y"]))
        for _ in range(steps):
            h = h + g
        return {"out": (h, None), "parts": [g, h - g]}


def test_scripted_model_with_dict_input_and_plain_arguments(cli, tmp_path):
    torch.manual_seed(0)
    model = torch.jit.script(DictAndNested().eval())
    model.save(str(tmp_path / "m.pt"))
    spec = {"inputs": [{"dict": {"x": {"shape": [2, 8]}, "y": {"shape": [2, 8]}}}, 0.5, 2]}
    (tmp_path / "inputs.json").write_text(json.dumps(spec))
    optimize(cli, tmp_path / "m.pt", tmp_path / "opt.pt", "--inputs", str(tmp_path / "inputs.json"))
    autograph.load_library()
    optimized = torch.jit.load(str(tmp_path / "opt.pt"))
    with torch.no_grad():
        for scale, steps in ((0.5, 2), (-2.0, 0), (1.5, 5)):  # not specialized to the example's values
            batch = {"x": torch.randn(2, 8), "y": torch.randn(2, 8)}
            assert_same(optimized(batch, scale, steps), model(batch, scale, steps))


def test_malformed_input_description_is_one_clear_error(cli, tmp_path, zoo):
    (tmp_path / "bad.json").write_text(json.dumps({"inputs": [{"dict": [1, 2]}]}))
    r = subprocess.run([cli, "optimize", str(zoo / "squeezenet.pt"), "-o", str(tmp_path / "x.pt"),
                        "--inputs", str(tmp_path / "bad.json")], capture_output=True, text=True)
    assert r.returncode != 0 and "input 0" in r.stderr and "dict" in r.stderr, r.stderr
