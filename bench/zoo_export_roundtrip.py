#!/usr/bin/env python3
"""Every zoo model (models/registry.py) through the export path as the torchvision corpus takes it
(bench/torchvision_corpus.py, method export): torch.export, autograph.optimize, torch.export.save, then
loaded and run in a fresh process on other inputs, its outputs compared with eager's.

    python bench/zoo_export_roundtrip.py [--models a,b] [--optimize-args '--verify 0'] [--out DIR]

Writes DIR/roundtrip.md (one row a model: status, relative error, optimize seconds, stages). Inductor
parts only with AUTOGRAPH_CORPUS_EXPORT_INDUCTOR=1, as in the corpus.
"""
import argparse
import shlex
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))
import torch  # noqa: E402

from models import registry  # noqa: E402
from torchvision_corpus import TOLERANCE, export_path_and_check  # noqa: E402


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--models", default=",".join(registry.MODELS))
    p.add_argument("--optimize-args", default="")
    p.add_argument("--timeout", type=float, default=1800)
    p.add_argument("--out", type=Path, required=True)
    args = p.parse_args()
    rows = []
    for name in args.models.split(","):
        model = registry.build(name)
        inputs = tuple(registry.make_inputs(name))
        check = tuple(registry.make_inputs(name, seed=registry.EXAMPLE_SEED + 7))
        with torch.no_grad():
            want = model(*check)
        with tempfile.TemporaryDirectory() as work:
            row = export_path_and_check(model, inputs, check, want, TOLERANCE, args.timeout, Path(work),
                                        shlex.split(args.optimize_args))
        print(name, row, flush=True)
        rows.append((name, row))
    args.out.mkdir(parents=True, exist_ok=True)
    lines = [f"`python bench/zoo_export_roundtrip.py --optimize-args '{args.optimize_args}'`, torch {torch.__version__}",
             "", "| model | status | rel. err | optimize s | stages | streams | kept | reason |",
             "|---|---|---:|---:|---:|---:|---|---|"]
    for name, r in rows:
        err = f"{r['rel_err']:.1e}" if isinstance(r.get("rel_err"), float) else ""
        lines.append(f"| {name} | {r['status']} | {err} | {r.get('optimize_s', '')} | {r.get('stages', '')} | "
                     f"{r.get('streams', '')} | {r.get('chosen', '')} | {r.get('reason', '')} |")
    (args.out / "roundtrip.md").write_text("# Zoo models through the export path, reloaded\n\n" + "\n".join(lines) + "\n")
    return 0 if all(r["status"] == "optimized" for _, r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
