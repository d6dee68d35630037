"""The real-model corpus's quick subset (bench/torchvision_corpus.py --quick): torchvision models
outside the zoo, optimized by the CLI with `autograph` and `nimble` and by the export path (.pt2 reloaded
in a fresh process), outputs compared with the
original's. The whole corpus is a script (its table is under bench/results/corpus-*)."""
import sys
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))
import torchvision_corpus as corpus  # noqa: E402


@pytest.mark.parametrize("name", sorted(corpus.QUICK))
def test_quick_corpus_model_optimizes_with_equal_outputs(cli, name):
    family = "segmentation" if name.startswith("lraspp") else "classification"
    res = corpus.run_model(name, family, corpus.QUICK[name], list(corpus.METHODS), cli, corpus.TOLERANCE, timeout=300)
    assert res["export"] == "trace"
    assert [r["method"] for r in res["rows"]] == list(corpus.METHODS)
    for row in res["rows"]:
        assert row["status"] in ("optimized", "fallback"), row
        assert row["rel_err"] <= corpus.TOLERANCE
        if row["status"] == "fallback":
            assert row["reason"]  # a fallback always says why
        assert row["optimized_ops"] > 0


def test_compare_sees_structure_values_and_dtype():
    a = {"out": torch.ones(2, 3), "aux": (torch.zeros(2), None)}
    assert corpus.compare(a, a) == (0.0, "")
    err, why = corpus.compare({"out": torch.ones(2, 3) * 1.5, "aux": (torch.zeros(2), None)}, a)
    assert err == pytest.approx(0.5) and why == ""
    assert corpus.compare({"out": torch.ones(2, 3)}, a)[1].startswith("structure differs")
    assert "instead of" in corpus.compare({"out": torch.ones(2, 3, dtype=torch.float64), "aux": (torch.zeros(2), None)}, a)[1]
    assert "instead of" in corpus.compare({"out": torch.ones(2, 3), "aux": (torch.zeros(2), 1)}, a)[1]


def test_arg_spec_describes_structures():
    spec = corpus.arg_spec(([torch.zeros(3, 4, 5)], {"k": torch.zeros(2, dtype=torch.int64)}, 3, None))
    assert spec == {"tuple": [{"list": [{"shape": [3, 4, 5], "dtype": "float32"}]},
                              {"dict": {"k": {"shape": [2], "dtype": "int64"}}}, 3, None]}
