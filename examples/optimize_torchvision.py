"""Optimize a torchvision model with autograph and compare it with the original.

    python examples/optimize_torchvision.py [--model resnet50] [--size 224] [--device cuda]
"""
import argparse
import time

import torch
import torchvision

import autograph


def median_ms(fn, x, runs=20):
    with torch.no_grad():
        for _ in range(3):
            fn(x)
        times = []
        for _ in range(runs):
            if x.is_cuda:
                torch.cuda.synchronize()
            start = time.perf_counter()
            fn(x)
            if x.is_cuda:
                torch.cuda.synchronize()
            times.append((time.perf_counter() - start) * 1e3)
    return sorted(times)[len(times) // 2]


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--model", default="resnet50")
    p.add_argument("--size", type=int, default=224)
    p.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    a = p.parse_args()
    torch.manual_seed(0)
    model = torchvision.models.get_model(a.model, weights=None).eval().to(a.device)
    x = torch.randn(1, 3, a.size, a.size, device=a.device)

    optimized, report = autograph.optimize(model, [x])
    print(f"{a.model}: {report['operators_before']} kernels -> {report['operators_after']}, "
          f"{report['stages']} stages on up to {report['streams']} streams, kept {report['chosen'] or report['method']}")
    for rewrite in report["rewrites"]:
        print(f"  rewrite {rewrite['name']}: {rewrite['changes']} change(s), {'kept' if rewrite['kept'] else 'not kept'}")

    with torch.no_grad():
        want, got = model(x), optimized(x)
    err = ((got - want).abs().max() / want.abs().max()).item()
    print(f"max relative error {err:.1e}")  # float32 rounding: folded BatchNorm, other summation orders
    assert err < 1e-3, "outputs differ"
    print(f"eager {median_ms(model, x):.2f} ms, autograph {median_ms(optimized, x):.2f} ms (median of 20, {a.device})")


if __name__ == "__main__":
    main()
