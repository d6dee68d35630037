#!/usr/bin/env python3
"""What a cut between two compilers costs on this CPU: the mix of OpenVINO's and ONNX Runtime's parts
(export/mixing.py) made where the compilers' profiles of their whole graphs put any piece faster under the
other (the cost of a cut, mixing.MIX_CUT, set to --cut, near nothing), then checked and timed side by side
with the fastest whole graph as every candidate is. The profiles' estimate of the mix (its parts' times
under their compilers, scaled to the whole graphs' measured times) against its measured time says what
the cuts cost that the profiles do not see: per cut, as a share of the fastest whole graph's time.

    python bench/mix_cut.py [--models a,b] [--unseen c,d] [--trained e,f] [--cut C] [--out DIR]

Models as bench/export_path.py's (--models: the zoo; --unseen: bench/unseen_models.py; --trained:
bench/trained_models.py). Writes DIR/results.csv and DIR/README.md. A benchmark, never a test.
"""
import argparse
import csv
import statistics
import sys
from pathlib import Path

import export_path  # bench/export_path.py: cold compile caches, models and inputs  # noqa: E402
import torch

import autograph
from autograph.export import mixing

ROOT = Path(__file__).resolve().parents[1]


def measure(name: str, args) -> dict:
    """One optimize of `name` with the cut's cost at --cut: the mix's parts, estimate and measured time."""
    model, inputs = export_path.model_and_inputs(name, args, "cpu")
    export_path.fresh_compile_caches()
    with torch.no_grad():
        _, report = autograph.optimize(torch.export.export(model, inputs, strict=False))
    contest = report["contest"]
    mix = contest.get("mix") or {}
    row = {"model": name, "kept": contest["kept"], "decision": mix.get("decision", "no mix tried"),
           "parts": " ".join(p["compiler"] for p in mix.get("parts", [])) or "—"}
    against = (contest["candidates"].get("mix") or {}).get("against")
    if not against or "fastest_ms" not in mix:
        return row
    cuts = len(mix["parts"]) - 1
    estimated = mix["fastest_parts_ms"] / mix["fastest_ms"]  # the mix's time over the fastest, as estimated
    measured = against["own_ms"] / against["ms"]  # as measured side by side
    row.update(cuts=cuts, estimated=round(estimated, 3), measured=round(measured, 3), against=against["candidate"],
               mix_ms=round(against["own_ms"], 3), fastest_ms=round(against["ms"], 3),
               per_cut=round((measured - estimated) / cuts, 3))
    return row


def write(rows: list, args, out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    keys = list(dict.fromkeys(k for row in rows for k in row))
    with open(out / "results.csv", "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=keys)
        writer.writeheader()
        writer.writerows(rows)
    lines = [f"# What a cut between compilers costs (autograph), cpu", "",
             f"`python bench/mix_cut.py {' '.join(sys.argv[1:])}` on {torch.get_num_threads()} threads, torch "
             f"{torch.__version__}. The mix made wherever a profile puts a piece faster under the other compiler "
             f"(a cut's cost taken as {args.cut} of the fastest whole graph's time per tensor crossing it); "
             "estimated and measured: the mix's time over the fastest whole graph's (below 1: faster); per cut: "
             "(measured − estimated) / cuts, what each cut cost beyond the profiles' estimate, as a share of the "
             "fastest whole graph's time.", "",
             "| model | kept | mix's parts | cuts | estimated | measured | mix ms | fastest whole ms | per cut |",
             "|---|---|---|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        lines.append(f"| {r['model']} | {r['kept']} | {r['parts']} | {r.get('cuts', '—')} | {r.get('estimated', '—')} "
                     f"| {r.get('measured', '—')} | {r.get('mix_ms', '—')} | {r.get('fastest_ms', '—')} "
                     f"| {r.get('per_cut', '—')} |")
    shares = [r["per_cut"] for r in rows if "per_cut" in r]
    if shares:
        lines += ["", f"Per cut over {len(shares)} mixes: least {min(shares):.3f}, median "
                  f"{statistics.median(shares):.3f}, most {max(shares):.3f} of the fastest whole graph's time."]
    (out / "README.md").write_text("\n".join(lines) + "\n")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--models", default="")
    p.add_argument("--unseen", default="")
    p.add_argument("--trained", default="")
    p.add_argument("--cut", type=float, default=0.005, help="the cost of a cut per crossing tensor, as a share "
                   "of the fastest whole graph's time (near nothing: every piece a profile puts faster moves)")
    p.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "mix-cut")
    args = p.parse_args()
    args.unseen = [n for n in args.unseen.split(",") if n]
    args.trained = [n for n in args.trained.split(",") if n]
    mixing.MIX_CUT = args.cut
    export_path.warm_compilers()
    rows = []
    for name in [n for n in args.models.split(",") if n] + args.unseen + args.trained:
        rows.append(measure(name, args))
        print(rows[-1], flush=True)
        write(rows, args, args.out)


if __name__ == "__main__":
    main()
