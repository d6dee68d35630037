#!/usr/bin/env python3
"""What the search is worth on ATen's kernels: the export path with option inductor off, planned by the
search (method autograph, verified on board) and one operator at a time (method sequential), timed side
by side on this machine; the ratio bounds how much faster the search can make a plan than the
one-operator-at-a-time plan (the export path's SEARCH_GAIN_BOUND rests on it).

    python bench/search_gain.py [--models a,b] [--repeats N] [--out DIR]

Writes DIR/results.csv and DIR/README.md. Long: a benchmark, never a timed test.
"""
import argparse
import csv
import statistics
import sys
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "python"), str(ROOT / "bench")]
import autograph  # noqa: E402
from autograph.export.timing import samples_side_by_side  # noqa: E402
from models import registry  # noqa: E402

DEFAULT_MODELS = "squeezenet,resnet50,inception_v3,resnext50_32x4d,nasnet_a_mobile,rnntc_sru,bert_base,randwire"


def measure(name: str, repeats: int) -> dict:
    torch.manual_seed(0)
    model = registry.build(name)
    inputs = tuple(registry.make_inputs(name))
    ep = torch.export.export(model, inputs, strict=False)
    row, runs = {"model": name}, {}
    for method in ("sequential", "autograph"):
        start = time.perf_counter()
        optimized, report = autograph.optimize(ep, method=method, inductor=False, openvino=False, onnxruntime=False)
        row[f"{method}_optimize_s"] = round(time.perf_counter() - start, 2)
        row[f"{method}_streams"] = report.get("streams")
        module = optimized.module()
        runs[method] = (lambda m: lambda: m(*inputs))(module)
    with torch.no_grad():
        samples = samples_side_by_side(runs, torch.device("cpu"), repeats, warmup=3)
    for method, xs in samples.items():
        row[f"{method}_median_ms"] = round(statistics.median(xs), 3)
    row["gain"] = round(row["sequential_median_ms"] / row["autograph_median_ms"], 3)
    return row


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default=DEFAULT_MODELS)
    parser.add_argument("--repeats", type=int, default=10)
    parser.add_argument("--out", default="bench/results/search-gain-cpu")
    args = parser.parse_args()
    rows = []
    for name in args.models.split(","):
        rows.append(measure(name, args.repeats))
        print(rows[-1], flush=True)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    with open(out / "results.csv", "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    lines = ["| model | sequential ms | search ms | gain | streams | optimize s (sequential / search) |",
             "|---|---:|---:|---:|---:|---:|"]
    for r in rows:
        lines.append(f"| {r['model']} | {r['sequential_median_ms']} | {r['autograph_median_ms']} | {r['gain']}× | "
                     f"{r['autograph_streams']} | {r['sequential_optimize_s']} / {r['autograph_optimize_s']} |")
    lines.append(f"\nLargest gain: {max(r['gain'] for r in rows)}×")
    (out / "README.md").write_text(f"`python bench/search_gain.py --models {args.models} --repeats {args.repeats}`"
                                   f" ({torch.get_num_threads()} threads, torch {torch.__version__})\n\n"
                                   + "\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
