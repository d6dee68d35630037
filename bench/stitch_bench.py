#!/usr/bin/env python3
"""Stitched kernels and substitutions before and after: per zoo model, the kernels launched (all,
and memory-bound ones) and the latency of the TorchScript module as loaded (`jit`), of AutoGraph's
schedule (`autograph`), of AutoGraph's schedule over the stitched graph (`autograph_stitch`) and
over the substituted and stitched graph (`autograph_all`: --substitutions --stitch), timed side by
side in one process, round-robin, after warm-up: median, p10 and p90 in ms, and ratios.

Usage: bench/stitch_bench.py --cli build/autograph --zoo models/zoo --out DIR
                             [--models bert_base nasnet_a_mobile rnntc_sru] [--device cpu]
                             [--warmup 20] [--runs 100]
Writes stitch.csv and stitch.md to --out (with the command, commit and environment).
"""
import argparse
import csv
import json
import os
import platform
import subprocess
import sys
import tempfile
import time

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import autograph  # noqa: E402


def optimize(cli, zoo, model, out, device, *extra):
    cmd = [cli, "optimize", os.path.join(zoo, model + ".pt"), "-o", out, "--method", "autograph", "--device", device,
           "--device-model", "h100" if device == "cuda" else "cpu", "--verify", "0", "--json",
           "--no-check-rewrites"]  # what each rewrite does, kept whether or not it pays
    cmd += list(extra)
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"{model}: {' '.join(cmd)} failed:\n{done.stderr}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def example_inputs(zoo, model, device):
    spec = json.load(open(os.path.join(zoo, model + ".json")))
    inputs = []
    for inp in spec["inputs"]:
        if inp["dtype"].startswith("int"):
            inputs.append(torch.randint(inp.get("low", 0), inp.get("high", 100), inp["shape"], device=device))
        else:
            inputs.append(torch.randn(*inp["shape"], device=device))
    return inputs


def first(out):
    return out[0] if isinstance(out, (tuple, list)) else out


def time_side_by_side(modules, inputs, device, warmup, runs):
    """Round-robin over the modules so that drifts of the machine hit all of them alike."""
    times = {name: [] for name in modules}
    sync = torch.cuda.synchronize if device == "cuda" else (lambda: None)
    with torch.no_grad():
        for i in range(warmup + runs):
            for name, module in modules.items():
                sync()
                start = time.perf_counter()
                module(*inputs)
                sync()
                if i >= warmup:
                    times[name].append((time.perf_counter() - start) * 1e3)
    stats = {}
    for name, ts in times.items():
        ts.sort()
        pick = lambda q: ts[min(len(ts) - 1, int(q * len(ts)))]  # noqa: E731
        stats[name] = (pick(0.5), pick(0.1), pick(0.9))
    return stats


def measure(args, model: str, tmp: str) -> dict:
    """One model's row: optimized three ways by the CLI (plain, stitched, everything), the stitched and
    the full modules checked against jit, all four timed side by side."""
    plain = optimize(args.cli, args.zoo, model, os.path.join(tmp, "a.pt"), args.device, "--no-stitch",
                     "--no-substitutions")
    stitched = optimize(args.cli, args.zoo, model, os.path.join(tmp, "s.pt"), args.device, "--stitch",
                        "--no-substitutions")
    full = optimize(args.cli, args.zoo, model, os.path.join(tmp, "f.pt"), args.device, "--stitch",
                    "--substitutions")
    modules = {"jit": torch.jit.load(os.path.join(args.zoo, model + ".pt"), map_location=args.device),
               "autograph": torch.jit.load(os.path.join(tmp, "a.pt")),
               "autograph_stitch": torch.jit.load(os.path.join(tmp, "s.pt")),
               "autograph_all": torch.jit.load(os.path.join(tmp, "f.pt"))}
    modules["jit"].eval()
    inputs = example_inputs(args.zoo, model, args.device)
    with torch.no_grad():
        want = first(modules["jit"](*inputs)).float()
        errs = []
        for name in ("autograph_stitch", "autograph_all"):
            got = first(modules[name](*inputs)).float()
            errs.append(((got - want).abs().max() / want.abs().max().clamp_min(1e-30)).item())
    err = max(errs)
    stats = time_side_by_side(modules, inputs, args.device, args.warmup, args.runs)
    return {
        "model": model, "device": args.device,
        "kernels_before": stitched["operators_before"], "kernels_after": stitched["operators_after"],
        "memory_bound_before": stitched["memory_bound_before"],
        "memory_bound_after": stitched["memory_bound_after"],
        "stitch_groups": stitched["stitch_groups"], "ops_stitched": stitched["ops_stitched"],
        "jit_ms": stats["jit"][0], "autograph_ms": stats["autograph"][0],
        "autograph_stitch_ms": stats["autograph_stitch"][0],
        "autograph_stitch_p10_ms": stats["autograph_stitch"][1],
        "autograph_stitch_p90_ms": stats["autograph_stitch"][2],
        "stitch_speedup": stats["autograph"][0] / stats["autograph_stitch"][0],
        "speedup_over_jit": stats["jit"][0] / stats["autograph_stitch"][0],
        "kernels_all": full["operators_after"], "memory_bound_all": full["memory_bound_after"],
        "attentions_fused": full["attentions_fused"], "linears_merged_all": full["linears_merged"],
        "convolutions_regrouped_all": full["convolutions_regrouped"],
        "autograph_all_ms": stats["autograph_all"][0], "autograph_all_p10_ms": stats["autograph_all"][1],
        "autograph_all_p90_ms": stats["autograph_all"][2],
        "all_speedup_over_jit": stats["jit"][0] / stats["autograph_all"][0],
        "max_rel_err": err, "search_s": stitched["search_seconds"],
        "kernels_plain_autograph": plain["operators_after"],
    }


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--cli", required=True)
    p.add_argument("--zoo", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--models", nargs="+", default=["bert_base", "nasnet_a_mobile", "rnntc_sru"])
    p.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    p.add_argument("--warmup", type=int, default=20)
    p.add_argument("--runs", type=int, default=100)
    args = p.parse_args()
    autograph.load_library()
    os.makedirs(args.out, exist_ok=True)

    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for model in args.models:
            r = measure(args, model, tmp)
            rows.append(r)
            print(f"{model}: memory-bound kernels {r['memory_bound_before']} -> {r['memory_bound_after']} (stitch) -> "
                  f"{r['memory_bound_all']} (all), autograph {r['autograph_ms']:.3f} ms -> stitched "
                  f"{r['autograph_stitch_ms']:.3f} ms -> all {r['autograph_all_ms']:.3f} ms (jit {r['jit_ms']:.3f} ms)",
                  flush=True)

    with open(os.path.join(args.out, "stitch.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0].keys()))
        w.writeheader()
        w.writerows(rows)
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    with open(os.path.join(args.out, "stitch.md"), "w") as f:
        f.write(f"# Stitched kernels before and after ({args.device})\n\n")
        f.write(f"Command: `{' '.join(sys.argv)}`  \nCommit: {commit}  \nHost: {platform.node()} "
                f"({os.cpu_count()} CPUs), torch {torch.__version__}"
                + (f", GPU {torch.cuda.get_device_name()}" if args.device == "cuda" else "") + "  \n"
                f"Timing: {args.warmup} warm-up + {args.runs} timed runs per module, round-robin; median (p10–p90) ms.\n\n")
        f.write("| model | kernels | memory-bound kernels | groups (ops) | jit ms | autograph ms | autograph+stitch ms "
                "| stitch speedup | vs jit | max rel err |\n|---|---|---|---|---|---|---|---|---|---|\n")
        for r in rows:
            f.write(f"| {r['model']} | {r['kernels_before']} → {r['kernels_after']} | {r['memory_bound_before']} → "
                    f"{r['memory_bound_after']} | {r['stitch_groups']} ({r['ops_stitched']}) | {r['jit_ms']:.3f} | "
                    f"{r['autograph_ms']:.3f} | {r['autograph_stitch_ms']:.3f} ({r['autograph_stitch_p10_ms']:.3f}–"
                    f"{r['autograph_stitch_p90_ms']:.3f}) | {r['stitch_speedup']:.2f}× | {r['speedup_over_jit']:.2f}× | "
                    f"{r['max_rel_err']:.1e} |\n")
        f.write("\nWith the substitutions too (`autograph_all`: `--substitutions --stitch`; attention fused, the "
                "search deciding linear merges, convolutions regrouped where the whole graph gets faster):\n\n"
                "| model | kernels | memory-bound kernels | attentions fused | linears merged | convs regrouped "
                "| autograph_all ms | vs jit |\n|---|---|---|---|---|---|---|---|\n")
        for r in rows:
            f.write(f"| {r['model']} | {r['kernels_before']} → {r['kernels_all']} | {r['memory_bound_before']} → "
                    f"{r['memory_bound_all']} | {r['attentions_fused']} | {r['linears_merged_all']} | "
                    f"{r['convolutions_regrouped_all']} | {r['autograph_all_ms']:.3f} ({r['autograph_all_p10_ms']:.3f}–"
                    f"{r['autograph_all_p90_ms']:.3f}) | {r['all_speedup_over_jit']:.2f}× |\n")


if __name__ == "__main__":
    main()
