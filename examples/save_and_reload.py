"""Optimize once, save the result, and load it in a fresh process without the original model.

    python examples/save_and_reload.py [--out /tmp/squeezenet_autograph.pt]
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
import autograph
model = autograph.load({path!r})        # registers autograph's ops, then torch.jit.load
torch.manual_seed(1)
x = torch.randn(2, 3, 128, 128)           # another batch size than the planned one also runs
with torch.no_grad():
    torch.save(model(x), {result!r})
"""


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", type=Path, default=Path("/tmp/squeezenet_autograph.pt"))
    a = p.parse_args()
    torch.manual_seed(0)
    model = torchvision.models.squeezenet1_1(weights=None).eval()
    optimized, report = autograph.optimize(model, [torch.randn(1, 3, 128, 128)], method="nimble")
    torch.jit.save(optimized, str(a.out))
    print(f"saved {a.out}: {report['method']} schedule, {report['stages']} stages")

    result = a.out.with_suffix(".result.pt")
    script = RELOAD.format(path=str(a.out), result=str(result))
    subprocess.run([sys.executable, "-c", script], check=True)
    torch.manual_seed(1)
    x = torch.randn(2, 3, 128, 128)
    with torch.no_grad():
        want = model(x)
    got = torch.load(result)
    err = ((got - want).abs().max() / want.abs().max()).item()
    print(f"reloaded in a fresh process: max relative error {err:.1e}")
    assert err < 1e-4, "outputs differ"


if __name__ == "__main__":
    main()
