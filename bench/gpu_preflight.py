#!/usr/bin/env python3
"""The GPU check's first stage: does the export path run at all on this device, in well under a minute?

Usage: bench/gpu_preflight.py [--device cuda|cpu] [--out FILE]

One small model (conv, then + a residual, then relu: the cuDNN conv+add+relu candidate's pattern) through
torch.export and autograph.optimize on the device, Inductor off (its cold compiles would take the stage's
minute) and the CPU-only compilers too (a CPU rehearsal stays quick), then:
  first     the output on the example input against eager in full float32;
  second    another input (other values) through the same program;
  inplace   the optimized program's weights written in place (halved), then called again: the program
            reads weights where they are (bound once, never copied per call; its small weights through
            views of a packed buffer), so the output must follow;
  switches  the float32-precision switches (TF32) as the user set them, before optimize and after every
            call: optimize and the program give them back as they were. Run once with TF32 off and once
            with torch's defaults.
Each check prints one line `preflight <check>: PASS|FAIL|SKIP <detail>`; the kept candidate, streams and
stages are printed too. Exit 0 when every check passed. --device cpu rehearses the checks on a machine
without a GPU (the switches there are torch's CPU ones).
Tolerance: 1e-4 of the output's scale with TF32 off (the same kernels up to the order of their sums), 5e-3
with torch's defaults on CUDA (cuDNN convolutions in TF32 then: 10 mantissa bits over 3x3x8 sums).
"""
import argparse
import copy
import sys
import time
from pathlib import Path
from typing import Dict, List

import torch

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT / "python") not in sys.path:
    sys.path.insert(0, str(ROOT / "python"))


class ConvAddRelu(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(8, 8, 3, padding=1)
        self.head = torch.nn.Conv2d(8, 4, 1)

    def forward(self, x):
        return self.head(torch.relu(self.conv(x) + x))


def switches() -> Dict[str, object]:
    """Every float32-precision switch a user may set, by the legacy and the newer names."""
    out: Dict[str, object] = {"matmul_precision": torch.get_float32_matmul_precision()}
    for name, read in (("cuda.matmul.allow_tf32", lambda: torch.backends.cuda.matmul.allow_tf32),
                       ("cudnn.allow_tf32", lambda: torch.backends.cudnn.allow_tf32),
                       ("cuda.matmul.fp32_precision", lambda: torch.backends.cuda.matmul.fp32_precision),
                       ("cudnn.conv.fp32_precision", lambda: torch.backends.cudnn.conv.fp32_precision)):
        try:
            out[name] = read()
        except Exception as e:  # a torch without the newer names, or one refusing to mix them
            out[name] = f"unreadable: {type(e).__name__}"
    return out


def error(got: torch.Tensor, want: torch.Tensor) -> float:
    return float((got.float() - want.float()).abs().max() / want.float().abs().max().clamp_min(1e-12))


def one_round(device: torch.device, tf32: bool, lines: List[str]) -> bool:
    tag = "tf32-default" if tf32 else "tf32-off"
    torch.backends.cuda.matmul.allow_tf32 = False  # torch's default for matmuls
    torch.backends.cudnn.allow_tf32 = tf32  # torch's default for convolutions is on
    tol = 5e-3 if (tf32 and device.type == "cuda") else 1e-4
    ok = True

    def say(check: str, passed: bool, detail: str) -> None:
        nonlocal ok
        ok = ok and passed
        lines.append(f"preflight {tag} {check}: {'PASS' if passed else 'FAIL'} {detail}")
        print(lines[-1], flush=True)

    import autograph
    torch.manual_seed(0)
    model = ConvAddRelu().to(device).eval()
    x1 = torch.randn(1, 8, 16, 16, device=device)
    x2 = torch.randn(1, 8, 16, 16, device=device) * 3 + 1
    before = switches()
    t0 = time.perf_counter()
    ep = torch.export.export(model, (x1,), strict=False)
    optimized, report = autograph.optimize(ep, inductor=False, openvino=False, onnxruntime=False)
    contest = report.get("inductor") or report.get("contest") or {}
    lines.append(f"preflight {tag} optimize: {time.perf_counter() - t0:.1f} s; device {report.get('device')}; kept "
                 f"{contest.get('kept', 'aten')}; streams {report.get('streams')}; stages {report.get('stages')}; "
                 f"fallback {report.get('fallback') or 'none'}")
    print(lines[-1], flush=True)
    say("switches after optimize", switches() == before, f"{switches()} (before {before})")
    module = optimized.module()

    def reference(m, x):
        saved = torch.backends.cudnn.allow_tf32
        torch.backends.cudnn.allow_tf32 = False
        try:
            with torch.no_grad():
                return m(x)
        finally:
            torch.backends.cudnn.allow_tf32 = saved

    with torch.no_grad():
        got1 = module(x1).clone()
        got2 = module(x2).clone()
    if device.type == "cuda":
        torch.cuda.synchronize()
    e1, e2 = error(got1, reference(model, x1)), error(got2, reference(model, x2))
    say("first input", e1 <= tol, f"max error {e1:.2e} of the output's scale (tolerance {tol:g})")
    say("second input", e2 <= tol, f"max error {e2:.2e} (tolerance {tol:g})")
    held = list(module.parameters()) + list(module.buffers()) + [
        v for v in vars(module).values() if isinstance(v, torch.Tensor)]  # lifted constants are attributes
    # Its weights, packed or not (its small ones are views of one packed buffer); not a package's bytes.
    weights = [t for t in held if t.is_floating_point()]
    if not weights:
        lines.append(f"preflight {tag} inplace: SKIP the optimized module holds no floating-point weight")
        print(lines[-1], flush=True)
    else:
        changed = copy.deepcopy(model)  # before the write: the program may share the model's own tensors
        with torch.no_grad():
            for p in changed.parameters():
                p.mul_(0.5)
            for t in weights:
                t.mul_(0.5)
            got3 = module(x1).clone()
        e3 = error(got3, reference(changed, x1))
        stale = error(got3, got1)
        say("inplace", e3 <= tol, f"max error {e3:.2e} against eager with the weights halved (tolerance {tol:g}); "
                                  f"differs from before the write by {stale:.2e}")
    say("switches after calls", switches() == before, f"{switches()}")
    return ok


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--device", choices=["cpu", "cuda"], default="cuda" if torch.cuda.is_available() else "cpu")
    p.add_argument("--out", type=Path, default=None, help="the lines are appended to this file too")
    args = p.parse_args(argv)
    device = torch.device(args.device)
    lines: List[str] = []
    ok = True
    for tf32 in (False, True):
        try:
            ok = one_round(device, tf32, lines) and ok
        except Exception as e:  # one clear line, then the other round
            ok = False
            lines.append(f"preflight {'tf32-default' if tf32 else 'tf32-off'}: FAIL {type(e).__name__}: "
                         f"{str(e).splitlines()[0][:300] if str(e) else ''}")
            print(lines[-1], flush=True)
    lines.append(f"preflight: {'PASSED' if ok else 'FAILED'} on {device}"
                 + (f" ({torch.cuda.get_device_name(0)})" if device.type == "cuda" else ""))
    print(lines[-1], flush=True)
    if args.out:
        with args.out.open("a") as f:
            f.write("\n".join(lines) + "\n")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
