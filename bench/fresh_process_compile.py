#!/usr/bin/env python3
"""Compile time as a user meets it: each compiler in a Python process of its own, as a deploy script
that runs once. bench/export_path.py times every compiler in one process after Inductor's one-time
vector-ISA check; a new process pays that check again for torch.compile and AOTInductor, and
autograph answers it from its record of this machine (python/autograph/inductor_toolchain.py).

For each model and method, a fresh process with the compile caches off (Inductor's, by
TORCHINDUCTOR_FORCE_DISABLE_CACHES; autograph's packages, an empty folder) builds the model, then
times the compile alone:
- compile_freezing: torch.compile with weight freezing, its first call;
- aoti: torch.export + aoti_compile_and_package (freezing) + load;
- export: torch.export + autograph.optimize (Inductor parts, as by default);
- export_without (with --without OPTION): the same with that compiler's option off (onnxruntime,
  openvino): what that compiler adds to an optimize.
For autograph the machine's ISA record is copied into the empty cache, as on any machine where
autograph has run once; `--first-run` leaves it out (the one time autograph pays the check). By
default torch.compile and AOTInductor get the same record (installed before the clock starts), as if
Inductor kept its answers on disk: the like-for-like comparison of the compilers, each in a fresh
process. `--isa-check-for-others` lets them pay the check, as they do today.
Each is repeated --repeats times (alternated); the table gives the median seconds and the ratios.

Models: the zoo's (models/registry.py) and bench/unseen_models.py's, by name.

Usage: python bench/fresh_process_compile.py [--models resnet50,bert_base] [--repeats 2] [--first-run]
       [--isa-check-for-others] [--without onnxruntime] [--methods export,export_without] --out DIR
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
METHODS = ("compile_freezing", "aoti", "export", "export_without")

CHILD = r"""
import os, sys, time, json
sys.path[:0] = [{root!r}, {python!r}, {bench!r}]
import torch
import unseen_models
from models import registry
name, method = sys.argv[1], sys.argv[2]
torch.manual_seed(0)
if name in unseen_models.ARCHITECTURES:
    model, inputs = unseen_models.build(name)
    model, inputs = model.eval(), tuple(inputs)
else:
    model = registry.build(name).eval()
    inputs = tuple(registry.make_inputs(name))
if not method.startswith("export") and os.environ.get("SAME_ISA_RECORD"):
    from autograph.export.compilers.toolchain import vec_isa_checks_remembered
    vec_isa_checks_remembered().__enter__()  # for the rest of this process
start = time.perf_counter()
with torch.no_grad():
    if method == "compile_freezing":
        with torch._inductor.config.patch(freezing=True):
            torch.compile(model)(*inputs)
    elif method == "aoti":
        ep = torch.export.export(model, inputs, strict=False)
        path = torch._inductor.aoti_compile_and_package(ep, package_path=os.environ["TMP_PACKAGE"],
                                                        inductor_configs={{"freezing": True}})
        torch._inductor.aoti_load_package(path)(*inputs)
    else:
        import autograph
        ep = torch.export.export(model, inputs, strict=False)
        without = {{os.environ["WITHOUT"]: False}} if method == "export_without" else {{}}
        optimized, _ = autograph.optimize(ep, **without)
        optimized.module()(*inputs)
print("SECONDS", time.perf_counter() - start)
"""


def run_once(name: str, method: str, record: Path, first_run: bool, same_record: bool, without: str = "") -> float:
    with tempfile.TemporaryDirectory(prefix="fresh-") as tmp:
        # Inductor's caches off, but its cache folder the usual one: the ISA check's test programs stay
        # built there, as on a user's machine, and only their per-process loading is paid.
        env = dict(os.environ, TORCHINDUCTOR_FORCE_DISABLE_CACHES="1",
                   AUTOGRAPH_CACHE_DIR=os.path.join(tmp, "autograph"), TMP_PACKAGE=os.path.join(tmp, "m.pt2"),
                   WITHOUT=without)
        os.makedirs(env["AUTOGRAPH_CACHE_DIR"])
        ours = method.startswith("export")
        if (ours and not first_run or not ours and same_record) and record.exists():
            shutil.copy(record, env["AUTOGRAPH_CACHE_DIR"])
        if same_record:
            env["SAME_ISA_RECORD"] = "1"
        code = CHILD.format(root=str(ROOT), python=str(ROOT / "python"), bench=str(ROOT / "bench"))
        out = subprocess.run([sys.executable, "-c", code, name, method], capture_output=True, text=True, env=env,
                             timeout=1800)
        lines = [x for x in out.stdout.splitlines() if x.startswith("SECONDS ")]
        if out.returncode != 0 or not lines:
            raise RuntimeError(f"{name} {method}: {out.stderr.strip().splitlines()[-1:]}")
        return float(lines[-1].split()[1])


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--models", default="resnet50,resnext50_32x4d,bert_base,rnntc_sru")
    p.add_argument("--repeats", type=int, default=2)
    p.add_argument("--first-run", action="store_true", help="autograph without its record of this machine")
    p.add_argument("--isa-check-for-others", action="store_true",
                   help="torch.compile and AOTInductor without autograph's ISA record (they pay Inductor's check)")
    p.add_argument("--without", default="", help="a compiler's option (onnxruntime, openvino): the export path "
                   "also optimizes with it off (method export_without)")
    p.add_argument("--methods", default="", help=f"some of {', '.join(METHODS)} (default: all that apply)")
    p.add_argument("--out", type=Path, required=True)
    args = p.parse_args()
    methods = [m for m in (args.methods.split(",") if args.methods else METHODS)
               if m != "export_without" or args.without]
    unknown = sorted(set(methods) - set(METHODS))
    if unknown:
        p.error(f"unknown method(s): {', '.join(unknown)}")
    sys.path.insert(0, str(ROOT / "python"))
    from autograph.export.cache import cache_dir
    record = Path(cache_dir()) / "vec-isa-checks.json"
    same_record = not args.isa_check_for_others
    if not args.first_run or same_record:  # the record, made here if this machine has none yet (as any earlier run would)
        from torch._inductor.cpu_vec_isa import valid_vec_isa_list
        from autograph.export.compilers.toolchain import vec_isa_checks_remembered
        vec_isa_checks_remembered().__enter__()  # for the rest of this process
        valid_vec_isa_list()
    rows = []
    for name in args.models.split(","):
        seconds = {m: [] for m in methods}
        for k in range(args.repeats):
            for method in methods if k % 2 == 0 else methods[::-1]:  # alternated: neither always first
                seconds[method].append(run_once(name, method, record, args.first_run, same_record, args.without))
        row = {"model": name, **{m: statistics.median(s) for m, s in seconds.items()}}
        rows.append(row)
        print(json.dumps(row), flush=True)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "results.json").write_text(json.dumps(rows, indent=1))
    lines = [f"Seconds to compile, each in a fresh process with empty compile caches (median of {args.repeats}, "
             f"alternated); autograph {'without' if args.first_run else 'with'} its record of this machine's "
             f"vector-ISA checks, torch.compile and AOTInductor {'without' if args.isa_check_for_others else 'with'} "
             "it. `python bench/fresh_process_compile.py "
             f"--models {args.models} --repeats {args.repeats}{' --first-run' if args.first_run else ''}"
             f"{' --isa-check-for-others' if args.isa_check_for_others else ''}"
             f"{f' --without {args.without}' if args.without else ''}"
             f"{f' --methods {args.methods}' if args.methods else ''}`"]
    titles = {"compile_freezing": "torch.compile (freezing)", "aoti": "AOTInductor",
              "export": "autograph (export path)", "export_without": f"autograph without {args.without}"}
    ratios = [(a, b) for a, b in (("export", "compile_freezing"), ("export", "aoti"), ("export", "export_without"))
              if a in methods and b in methods]
    lines += ["", "| model | " + " | ".join(titles[m] for m in methods) + "".join(
        f" | {titles[a]} ÷ {titles[b]}" for a, b in ratios) + " |",
        "|---|" + "---:|" * (len(methods) + len(ratios))]
    for r in rows:
        lines.append(f"| {r['model']} | " + " | ".join(f"{r[m]:.1f}" for m in methods) + "".join(
            f" | {r[a] / r[b]:.2f}×" for a, b in ratios) + " |")
    (args.out / "results.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
