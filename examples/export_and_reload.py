"""The export path: torch.export a model, optimize the ExportedProgram, save it as .pt2, and load and run
it in a fresh process that only imports autograph (no TorchScript anywhere).

    python examples/export_and_reload.py [--out /tmp/inception_block_autograph.pt2]
"""
import argparse
import subprocess
import sys
from pathlib import Path

import torch
import torchvision

import autograph

RELOAD = """
import torch
import autograph                          # registers autograph::execute and its fake kernel
program = torch.export.load({path!r})
torch.manual_seed(1)
x = torch.randn(1, 192, 35, 35)
torch.save(program.module()(x), {result!r})
"""


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", type=Path, default=Path("/tmp/inception_block_autograph.pt2"))
    a = p.parse_args()
    torch.manual_seed(0)
    # One Inception-A block: four branches on one input, the concurrency autograph schedules.
    model = torchvision.models.inception.InceptionA(192, pool_features=32).eval()
    x = torch.randn(1, 192, 35, 35)
    exported = torch.export.export(model, (x,))
    optimized, report = autograph.optimize(exported)           # method="autograph"
    torch.export.save(optimized, str(a.out))
    print(f"saved {a.out}: {report['method']} schedule ({report['chosen']}), {report['stages']} stages on "
          f"{report['streams']} streams, {report['measured_ms']:.2f} ms measured")

    result = a.out.with_suffix(".result.pt")
    subprocess.run([sys.executable, "-c", RELOAD.format(path=str(a.out), result=str(result))], check=True)
    torch.manual_seed(1)
    x = torch.randn(1, 192, 35, 35)
    with torch.no_grad():
        want = model(x)
    got = torch.load(result)
    err = ((got - want).abs().max() / want.abs().max()).item()
    print(f"reloaded in a fresh process: max relative error {err:.1e}")
    assert err < 1e-5, "outputs differ"


if __name__ == "__main__":
    main()
