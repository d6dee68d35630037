#!/usr/bin/env python3
"""Stitching coverage: per model, the memory-bound kernels the graph launches as loaded and after the
stitch pass (unmeasured: what the planner finds), the groups and operators stitched, and what the
default pipeline keeps: each planned group is timed against its own operators and stitched only when
faster (groups faster / slower), then the whole graph is timed with and without the stitching (on the
CPU after oneDNN prepacking, which it runs first, so fewer groups are planned there). Models: the zoo's, plus torchvision CNNs written with
ReLU(inplace=True) and in-place residual adds, traced in eval mode with seeded random weights and
saved with torch.jit.save, as models/export.py does (mobilenet_v2, resnet34, densenet121: a
pre-activation net whose batch norms cannot fold into convolutions; convnext_tiny: layer norms of
permuted maps, GELU, and layer-scale multiplies before in-place residual adds).

Usage: bench/stitch_coverage.py --cli build/autograph --zoo models/zoo --out DIR
                                [--models squeezenet mobilenet_v2 ...] [--device cpu] [--no-measure]
Writes coverage.csv and coverage.md to --out (with the command and commit).
"""
import argparse
import csv
import json
import os
import subprocess
import sys
import tempfile

import torch

ZOO = ["squeezenet", "resnet50", "resnext50_32x4d", "inception_v3", "nasnet_a_mobile", "nasnet_a_large",
       "randwire", "rnntc_sru", "bert_base"]
TORCHVISION = ["mobilenet_v2", "resnet34", "densenet121", "convnext_tiny"]


def export_torchvision(name, directory):
    import torchvision
    torch.manual_seed(0)
    model = getattr(torchvision.models, name)(weights=None).eval()
    x = torch.randn(1, 3, 224, 224)
    with torch.no_grad():
        traced = torch.jit.trace(model, (x,))
    path = os.path.join(directory, name + ".pt")
    torch.jit.save(traced, path)
    return path, ["--input-shape", "1,3,224,224"]


def optimize(cli, path, out, device, *extra):
    cmd = [cli, "optimize", path, "-o", out, "--method", "sequential", "--device", device, "--json", *extra]
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed:\n{done.stderr}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--cli", required=True)
    p.add_argument("--zoo", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--models", nargs="*", default=[m for m in ZOO if m != "nasnet_a_large"] + TORCHVISION)
    p.add_argument("--device", default="cpu")
    p.add_argument("--no-measure", action="store_true", help="only the unmeasured coverage")
    args = p.parse_args()
    os.makedirs(args.out, exist_ok=True)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for model in args.models:
            if model in TORCHVISION:
                path, shape = export_torchvision(model, tmp)
            else:
                path, shape = os.path.join(args.zoo, model + ".pt"), []
            out = os.path.join(tmp, model + "_opt.pt")
            found = optimize(args.cli, path, out, args.device, *shape, "--no-substitutions", "--stitch",
                             "--no-check-rewrites")
            row = {"model": model, "memory_bound_before": found["memory_bound_before"],
                   "memory_bound_after": found["memory_bound_after"], "stitch_groups": found["stitch_groups"],
                   "ops_stitched": found["ops_stitched"], "groups_faster": "", "groups_slower": "",
                   "stitch_kept": "", "without_ms": "", "with_ms": ""}
            if not args.no_measure:
                product = optimize(args.cli, path, out, args.device, *shape)
                for r in product["rewrites"]:
                    if r["name"] != "stitch":
                        continue
                    row.update(groups_faster=r["changes"], groups_slower=r.get("rejected", 0))
                    if r["changes"] > 0:
                        row.update(stitch_kept="yes" if r["kept"] else "no",
                                   without_ms=f"{r['without_ms']:.3f}", with_ms=f"{r['with_ms']:.3f}")
                    else:
                        row["stitch_kept"] = "no group to keep"
            rows.append(row)
            print(row, flush=True)
    with open(os.path.join(args.out, "coverage.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    with open(os.path.join(args.out, "coverage.md"), "w") as f:
        f.write(f"Command: `{' '.join(sys.argv)}`, commit {commit}, device {args.device}, torch {torch.__version__}\n\n")
        f.write("| model | memory-bound before | after stitching | groups | ops stitched | "
                "default: groups faster | slower | whole graph keeps | without ms | with ms |\n"
                "|---|---:|---:|---:|---:|---:|---:|---|---:|---:|\n")
        for r in rows:
            f.write(f"| {r['model']} | {r['memory_bound_before']} | {r['memory_bound_after']} | {r['stitch_groups']} | "
                    f"{r['ops_stitched']} | {r['groups_faster']} | {r['groups_slower']} | {r['stitch_kept']} | "
                    f"{r['without_ms']} | {r['with_ms']} |\n")


if __name__ == "__main__":
    main()
