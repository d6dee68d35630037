"""Optimize a model with autograph and package it for C++: an AOTInductor package (.pt2) that a
process with autograph's runtime preloaded loads with AOTIModelPackageLoader, no Python
(examples/runtime_host/serve_host, built by CMake beside the library).

    python examples/aoti_package/make_package.py --out DIR
    LD_PRELOAD=build/libautograph_runtime.so build/serve_host DIR/model.pt2 DIR/input.bin DIR/expected.bin 1 3 32 32

(with build/libautograph_openvino.so or build/libautograph_onnxruntime.so too, colon-separated, where the
kept program has an OpenVINO or ONNX Runtime part: the printed command says.)

Writes DIR/model.pt2, DIR/input.bin and DIR/expected.bin (raw float32: the input, eager's output) and
prints the command that runs it.
"""
import argparse
import sys
from pathlib import Path

import torch

import autograph


class Block(torch.nn.Module):
    """A stem and three branches side by side, joined: a small network of the kind autograph plans."""

    def __init__(self):
        super().__init__()
        self.stem = torch.nn.Sequential(torch.nn.Conv2d(3, 16, 3, padding=1), torch.nn.BatchNorm2d(16), torch.nn.ReLU())
        self.branches = torch.nn.ModuleList([torch.nn.Conv2d(16, 16, k, padding=k // 2) for k in (1, 3, 5)])
        self.head = torch.nn.Linear(48, 10)

    def forward(self, x):
        y = self.stem(x)
        z = torch.cat([torch.relu(b(y)) for b in self.branches], dim=1)
        return self.head(z.mean(dim=(2, 3)))


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--method", default="autograph")
    a = p.parse_args()
    a.out.mkdir(parents=True, exist_ok=True)
    torch.manual_seed(0)
    model = Block().eval()
    x = torch.randn(1, 3, 32, 32)
    optimized, report = autograph.optimize(torch.export.export(model, (x,)), method=a.method)
    kept = (report.get("contest") or {}).get("kept", "aten")
    package = torch._inductor.aoti_compile_and_package(optimized, package_path=str(a.out / "model.pt2"))
    with torch.no_grad():
        want = model(x)
    x.numpy().tofile(a.out / "input.bin")
    want.numpy().tofile(a.out / "expected.bin")
    # The runtime, and the runner of each compiler whose parts the kept program calls (OpenVINO's, ONNX
    # Runtime's: on CPU, when they measured fastest; optimize(..., openvino=False, onnxruntime=False)
    # keeps them out).
    program = " ".join(a for n in optimized.graph.nodes for a in n.args if isinstance(a, str))
    preload = [autograph.runtime_library_path()]
    preload += [autograph.runner_library_path(runner) for runner in ("openvino", "onnxruntime")
                if f"run_{runner}_part" in program]
    print(f"autograph kept the {kept!r} candidate, {report['stages']} stages; wrote {package}")
    print(f"run: LD_PRELOAD={':'.join(preload)} serve_host {package} {a.out / 'input.bin'} {a.out / 'expected.bin'} "
          + " ".join(map(str, x.shape)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
