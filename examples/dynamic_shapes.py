"""One optimized program for many input shapes: a small encoder exported with a dynamic batch and sequence
length, optimized once — planned at the example's shape; other shapes in the exported range run one
Inductor package compiled for every shape (or the program's own graph, if that measures faster) —
saved as .pt2, loaded back and run at several shapes, outputs checked against eager PyTorch.

    python examples/dynamic_shapes.py [--out /tmp/encoder_dynamic.pt2]
"""
import argparse
from pathlib import Path

import torch

import autograph


class Encoder(torch.nn.Module):
    def __init__(self, vocab=1000, width=64, heads=4, layers=2):
        super().__init__()
        self.embed = torch.nn.Embedding(vocab, width)
        layer = torch.nn.TransformerEncoderLayer(width, heads, 4 * width, batch_first=True, dropout=0.0)
        self.encoder = torch.nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.head = torch.nn.Linear(width, 2)

    def forward(self, ids):
        return self.head(self.encoder(self.embed(ids)).mean(dim=1))


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", type=Path, default=Path("/tmp/encoder_dynamic.pt2"))
    a = p.parse_args()
    torch.manual_seed(0)
    model = Encoder().eval()
    ids = torch.randint(0, 1000, (2, 32))
    dims = {0: torch.export.Dim("batch", min=1, max=16), 1: torch.export.Dim("length", min=2, max=256)}
    optimized, report = autograph.optimize(model, (ids,), ir="export", dynamic_shapes=(dims,))
    dynamic = report["dynamic_shapes"]
    print(f"planned for {dynamic['planned_for']}; other shapes run: {dynamic['other_shapes']} "
          f"(median ms at the example's shape: {dynamic.get('median_ms')})")
    torch.export.save(optimized, str(a.out))
    loaded = torch.export.load(str(a.out))
    worst = 0.0
    with torch.no_grad():
        for batch, length in ((2, 32), (1, 7), (16, 256), (5, 100)):
            x = torch.randint(0, 1000, (batch, length))
            want = model(x)
            got = loaded.module()(x)
            err = ((got - want).abs().max() / want.abs().max()).item()
            worst = max(worst, err)
            print(f"batch {batch:2d}, length {length:3d}: relative error {err:.1e}")
    print(f"max relative error {worst:.1e}")
    # Inductor's generated code reorders float32 arithmetic: 1e-4 of the output's scale.
    assert worst < 1e-4, "outputs differ"


if __name__ == "__main__":
    main()
