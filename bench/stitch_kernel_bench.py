#!/usr/bin/env python3
"""The stitched kernel (CPU, or NVRTC-generated on CUDA) against the ATen operators it replaces and against Inductor's code for the
same group (AOTInductor, run through its C++ loader as autograph runs an Inductor part), on groups the
stitch planner finds in real models (DenseNet's batch norm + ReLU at three map sizes, NasNet's and RandWire's adds and
activations, BERT's residual add + layer norm, scaled softmax and GELU + add). Both sides run as
TorchScript functions (one interpreter call each), after warm-up: the best of 3 medians of N calls,
in microseconds, the ratios (> 1: the stitched kernel is faster) and the largest errors relative to
the output's scale.

Usage: bench/stitch_kernel_bench.py [--device cpu|cuda] [--runs 200] [--no-inductor] [--packages DIR [--compile-only]]
       [--out DIR]   (writes DIR/stitch_kernel.md)
The library comes from AUTOGRAPH_LIBRARY or build/libautograph.so, like the python package."""
import argparse
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import autograph  # noqa: E402


def bn_relu(x, s, b):
    return torch.relu(x * s + b)


def add_relu(x, y):
    return torch.relu(x + y)


def relu_add(x, y):
    return torch.relu(x) + y


def sigmoid_mul_add(x, w, y):
    return torch.sigmoid(w) * x + y


def add_layer_norm(x, r, w, b):
    return F.layer_norm(x + r, [768], w, b, 1e-12)


def scaled_softmax(x):
    return torch.softmax(x / 8.0, -1)


def gelu_add(x, y):
    return F.gelu(x) + y


GROUPS = [bn_relu, add_relu, relu_add, sigmoid_mul_add, add_layer_norm, scaled_softmax, gelu_add]
SCRIPTED = {f: torch.jit.script(f) for f in GROUPS}


class _Group(torch.nn.Module):
    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, *inputs):
        return (self.fn(*inputs),)


def inductor_runner(fn, inputs, path, compile_only=False):
    """The group compiled by AOTInductor as autograph compiles an Inductor part (C++/OpenMP on the CPU,
    Triton on CUDA), run through its C++ loader (the call autograph::run_inductor_part makes; no Python
    pytree on the way)."""
    from autograph.export.compilers.toolchain import aoti_configs, compile_package
    if not os.path.exists(path):  # --packages keeps them between a compile-only run and a timed one
        compile_package(torch.export.export(_Group(fn), tuple(inputs)), path, aoti_configs())
    if compile_only:
        return None
    device = inputs[0].device
    loader = torch._C._aoti.AOTIModelPackageLoader(path, "model", False, 1, (device.index or 0) if device.type == "cuda" else -1)
    return lambda *xs: loader.run(list(xs))


def stitched_op(inputs: list[torch.Tensor], program: str):
    return torch.ops.autograph.stitched(inputs, program)


def cases():
    torch.manual_seed(0)
    out = []  # (name, group function, inputs, stitched program)
    for c, h in [(128, 56), (512, 7), (64, 112)]:
        out.append((f"bn_relu 1x{c}x{h}x{h}", bn_relu, [torch.randn(1, c, h, h), torch.randn(c, 1, 1), torch.randn(c, 1, 1)],
                    "reduce 0; in 0; in 1; mul 0 1; in 2; add 2 3; relu 4; out 5"))
    for c, h in [(88, 28), (44, 83), (256, 14)]:
        x, y = torch.randn(1, c, h, h), torch.randn(1, c, h, h)
        out.append((f"add_relu 1x{c}x{h}x{h}", add_relu, [x, y], "reduce 0; in 0; in 1; add 0 1; relu 2; out 3"))
        out.append((f"relu_add 1x{c}x{h}x{h}", relu_add, [x, y], "reduce 0; in 0; relu 0; in 1; add 1 2; out 3"))
    out.append(("sigmoid_mul_add 1x78x56x56", sigmoid_mul_add, [torch.randn(1, 78, 56, 56), torch.randn(()), torch.randn(1, 78, 56, 56)],
                "reduce 0; in 1; sigmoid 0; in 0; mul 1 2; in 2; add 3 4; out 5"))
    out.append(("add_layer_norm 1x128x768", add_layer_norm,
                [torch.randn(1, 128, 768), torch.randn(1, 128, 768), torch.randn(768), torch.randn(768)],
                "reduce 1; in 0; in 1; add 0 1; rowmean 2; sub 2 3; mul 4 4; rowmean 5; const 1e-12; add 6 7; "
                "rsqrt 8; mul 4 9; in 2; mul 10 11; in 3; add 12 13; out 14"))
    out.append(("scaled_softmax 1x12x128x128", scaled_softmax, [torch.randn(1, 12, 128, 128)],
                "reduce 1; in 0; const 8; div 0 1; rowmax 2; sub 2 3; exp 4; rowsum 5; div 5 6; out 7"))
    out.append(("gelu_add 1x128x3072", gelu_add, [torch.randn(1, 128, 3072), torch.randn(1, 128, 3072)],
                "reduce 0; in 0; gelu 0; in 1; add 1 2; out 3"))
    return out


def median_us(f, args, runs, cuda=False):
    """The median time of one call. On CUDA a sample is 10 calls queued back to back and then waited
    for (a kernel of a few µs is shorter than one synchronisation), divided by 10."""
    batch = 10 if cuda else 1
    sync = torch.cuda.synchronize if cuda else (lambda: None)
    for _ in range(20):
        f(*args)
    sync()
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        for _ in range(batch):
            f(*args)
        sync()
        times.append((time.perf_counter() - t) / batch)
    return statistics.median(times) * 1e6


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--out")
    parser.add_argument("--device", default="cpu", choices=("cpu", "cuda"),
                        help="cuda: the NVRTC-generated kernel against ATen's and Triton's (through AOTInductor)")
    parser.add_argument("--packages", help="keep the Inductor packages in this folder and reuse those found there")
    parser.add_argument("--shard", default="0/1", help="I/N: only every N-th group from the I-th (compile in N processes)")
    parser.add_argument("--compile-only", action="store_true",
                        help="only compile the Inductor packages into --packages (e.g. while the GPU is busy), no timing")
    parser.add_argument("--no-inductor", dest="inductor", action="store_false",
                        help="without the Inductor column (each group compiled by AOTInductor: slow)")
    args = parser.parse_args()
    autograph.load_library()
    stitched = torch.jit.script(stitched_op)  # after the library: the script compiler resolves the op
    lines = ["| group | ATen ops µs | stitched µs | Inductor µs | ATen ÷ stitched | Inductor ÷ stitched | max err / scale (stitched, Inductor) |",
             "|---|---:|---:|---:|---:|---:|---|"]
    scratch = tempfile.TemporaryDirectory(prefix="stitch-inductor-")  # removed at the end
    folder = args.packages or scratch.name
    os.makedirs(folder, exist_ok=True)
    if args.compile_only and not (args.inductor and args.packages):
        parser.error("--compile-only needs --packages (and the Inductor column)")
    cuda = args.device == "cuda"
    shard, shards = (int(x) for x in args.shard.split("/"))
    for index, (name, fn, inputs, program) in enumerate(cases()):
        if index % shards != shard:
            continue
        inputs = [x.to(args.device) for x in inputs]
        reference = SCRIPTED[fn]
        package = os.path.join(folder, f"{args.device}-" + "".join(c if c.isalnum() else "_" for c in name) + ".pt2")
        if args.compile_only:
            inductor_runner(fn, inputs, package, compile_only=True)
            print(f"compiled {name}", flush=True)
            continue
        want = reference(*inputs)
        compiled = inductor_runner(fn, inputs, package) if args.inductor else None
        got = stitched(inputs, program)[0]
        err = ((got - want).abs().max() / want.abs().max()).item()
        errs = f"{err:.1e}"
        if compiled is not None:
            errs += f", {((compiled(*inputs)[0] - want).abs().max() / want.abs().max()).item():.1e}"
        aten, mine, ind = [], [], []
        for _ in range(3):  # alternated, so drifts of a shared machine fall on all
            aten.append(median_us(reference, inputs, args.runs, cuda))
            mine.append(median_us(stitched, (inputs, program), args.runs, cuda))
            if compiled is not None:
                ind.append(median_us(compiled, inputs, args.runs, cuda))
        a, s, i = min(aten), min(mine), (min(ind) if ind else float("nan"))
        lines.append(f"| {name} | {a:.1f} | {s:.1f} | {i:.1f} | {a / s:.2f} | {i / s:.2f} | {errs} |")
        print(lines[-1], flush=True)
    if args.compile_only:
        return
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    if not commit and os.path.exists(".gpu/COMMIT"):  # a copy without .git, on the GPU machine
        commit = open(".gpu/COMMIT").read().split()[0][:7]
    if cuda:
        gpu = torch.cuda.get_device_properties(0)
        header = (f"stitched CUDA kernel (NVRTC) vs ATen and AOTInductor (Triton), {gpu.name}, CUDA {torch.version.cuda}, "
                  f"torch {torch.__version__}, commit {commit}, `bench/stitch_kernel_bench.py --device cuda --runs {args.runs}`")
    else:
        header = (f"stitched CPU kernel ({torch.ops.autograph.stitched_cpu_capability()} build) vs ATen and AOTInductor "
              f"({torch.backends.cpu.get_cpu_capability()}), {torch.get_num_threads()} threads, "
              f"torch {torch.__version__}, {platform.processor() or platform.machine()}, commit {commit}, "
              f"`bench/stitch_kernel_bench.py --runs {args.runs}`")
    if args.out:
        os.makedirs(args.out, exist_ok=True)
        with open(os.path.join(args.out, "stitch_kernel.md"), "w") as f:
            f.write(header + "\n\n" + "\n".join(lines) + "\n")
    print(header)


if __name__ == "__main__":
    main()
