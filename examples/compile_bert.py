"""torch.compile a Hugging-Face-style BERT (plain torch, dict output) with the autograph backend.

    python examples/compile_bert.py [--layers 2] [--length 32]
"""
import argparse
import sys
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # models/ of this checkout: the BERT
import autograph  # noqa: E402,F401  (registers the "autograph" backend)
from models.hf_style_bert import HfStyleBert, example_inputs  # noqa: E402


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--layers", type=int, default=2)
    p.add_argument("--length", type=int, default=32)
    a = p.parse_args()
    torch.manual_seed(0)
    model = HfStyleBert(layers=a.layers).eval()
    compiled = torch.compile(model, backend="autograph", options={"method": "autograph", "verify": 1})
    with torch.no_grad():
        for length in (a.length, a.length // 2):  # a second shape: Dynamo recompiles, autograph optimizes again
            inputs = example_inputs(length=length)
            want, got = model(*inputs), compiled(*inputs)
            for key in want:
                err = ((got[key] - want[key]).abs().max() / want[key].abs().max()).item()
                print(f"length {length}: {key} {tuple(got[key].shape)}, max relative error {err:.1e}")
                assert err < 1e-4, "outputs differ"


if __name__ == "__main__":
    main()
