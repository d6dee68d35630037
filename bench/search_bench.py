#!/usr/bin/env python3
"""Schedule searches side by side: per zoo model and method, search time, states and stages explored,
predicted latency under one analytical device model, and the measured latency of the optimized
module on the device at hand.

Runs `autograph optimize --json` once per (model, method); writes search.csv and search.md to --out.
Usage: bench/search_bench.py --cli build/autograph --zoo models/zoo --out DIR
                             [--models inception_v3 ...] [--methods greedy nimble ios autograph]
                             [--device cpu] [--device-model h100] [--measure 20]
"""
import argparse
import csv
import json
import os
import subprocess
import sys
import tempfile

FIELDS = ["model", "method", "device", "cost", "operators_before", "operators_after", "stages", "groups", "streams",
          "predicted_ms", "measured_ms", "search_seconds", "states_explored", "stages_evaluated"]


def run(cli, zoo, model, method, args):
    with tempfile.TemporaryDirectory() as tmp:
        cmd = [cli, "optimize", os.path.join(zoo, model + ".pt"), "-o", os.path.join(tmp, "out.pt"), "--method",
               method, "--device", args.device, "--device-model", args.device_model, "--cost", "analytical",
               "--verify", "0", "--measure", str(args.measure), "--json",
               # the searches compared on the graph as lowered: no rewrites
               "--no-substitutions", "--no-stitch", "--no-check-rewrites"]
        done = subprocess.run(cmd, capture_output=True, text=True)
        if done.returncode != 0:
            sys.stderr.write(f"{model} {method}: {done.stderr.strip().splitlines()[-1] if done.stderr else 'failed'}\n")
            return None
        return json.loads(done.stdout.strip().splitlines()[-1])


def fmt(value, digits=3):
    if value is None:
        return "–"
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return str(value)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--cli", required=True)
    p.add_argument("--zoo", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--models", nargs="+", default=["inception_v3", "resnet50", "resnext50_32x4d", "nasnet_a_mobile",
                                                  "nasnet_a_large", "randwire", "squeezenet", "rnntc_sru",
                                                  "bert_base"])
    p.add_argument("--methods", nargs="+", default=["greedy", "nimble", "ios", "autograph"])
    p.add_argument("--device", default="cpu")
    p.add_argument("--device-model", default="h100")
    p.add_argument("--measure", type=int, default=20)
    args = p.parse_args()

    rows = []
    for model in args.models:
        for method in args.methods:
            result = run(args.cli, args.zoo, model, method, args)
            if result is None:
                continue
            result["model"] = model
            rows.append(result)
            print(f"{model:18s} {method:10s} predicted {fmt(result['predicted_ms'])} ms  measured "
                  f"{fmt(result['measured_ms'])} ms  search {result['search_seconds']:.2f} s  "
                  f"states {result['states_explored']}", file=sys.stderr)

    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "search.csv"), "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=FIELDS, extrasaction="ignore")
        writer.writeheader()
        writer.writerows(rows)
    lines = [f"| model | method | stages | kernels | predicted ms ({args.device_model}) | measured ms ({args.device}) "
             f"| search s | states | stages costed |", "|---|---|---:|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        lines.append(f"| {r['model']} | {r['method']} | {r['stages']} | {r['operators_after']} | "
                     f"{fmt(r['predicted_ms'])} | {fmt(r['measured_ms'])} | {r['search_seconds']:.2f} | "
                     f"{r['states_explored']} | {r.get('stages_evaluated', '–')} |")
    lines.append("")
    lines.append(f"Predicted: analytical model of {args.device_model} (not calibrated), the search's own objective. "
                 f"Measured: median of {args.measure} runs of the optimized module on {args.device}.")
    with open(os.path.join(args.out, "search.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
