#!/usr/bin/env python3
"""One table of every inference method on one device, timed first and checked after, within a budget.

Usage: bench/gpu_table.py --out DIR [--models squeezenet resnet50 bert_base] [--device cuda|cpu] [--batch 1]
                          [--budget 540] [--warmup 20] [--runs 50] [--methods ...] [--stage N] [--zoo models/zoo]
                          [--cli build/autograph] [--cache-dir DIR] [--no-warm] [--rehearse]
       bench/gpu_table.py --plan [--stage N | --models ... --methods ...] [--budget S] [--no-warm]
       bench/gpu_table.py --warm-only --out DIR [--device cuda] [--cache-dir DIR]
       bench/gpu_table.py --check DIR/results.csv --models ... [--methods ...]

Methods (the CSV's `method`): eager, torch_compile_default, torch_compile_reduce_overhead,
torch_compile_max_autotune, jit_frozen, nimble, autograph_graph (the TorchScript path replayed as a CUDA
Graph), autograph_export (torch.export, then autograph.optimize: the export path), and jit (the zoo's
TorchScript module as loaded: the reference of max_abs_err / max_rel_err, as in `autograph bench`). Below
float32: autograph_export_tf32 / _bf16 / _fp16 (option precision; the row's `precision` says what the kept
program computes in), torch_compile_autocast_bf16 / _fp16 (torch.compile's default mode under autocast) and
autograph_graph_bf16 (the TorchScript path with option precision bf16, planned by autograph.optimize in the
step's process; its note has its float32 and lowered plans' times side by side at optimize); tf32 and fp16
on CUDA only.

Each step is a child process under its own `timeout`; a step that fails or runs out of time does not stop
the others. Per model, while the budget lasts:
  cli           `autograph bench` builds and times jit, jit_frozen, nimble and autograph_graph (its own
                results.csv, kept as cli_median_ms) and saves the modules it built (--cache);
  main          one process: loads those modules (autograph.load), builds eager and torch.compile default
                and reduce-overhead, times all of them side by side, round-robin, by autograph's one
                timing policy (autograph.export.timing: warm-up, then --runs rounds; CUDA events on the
                current stream, as `autograph bench`; on CPU untimed calls of the same method before
                each timed one), and only then checks
                outputs: on the timed input against jit and against eager with TF32 off, and on a SECOND
                input (other tensors, another seed) against eager with TF32 off; then builds the export
                path and does the same again with it among them (a crash there keeps the rest complete);
  retry         after a main step that crashed (not one killed at its cap): the methods it had not built yet,
                the export path among them, in a process of their own, eager timed beside them as an anchor;
  precision     the methods below float32 in a process of their own, eager timed beside them as an anchor,
                checked as above (their errors against TF32-off eager are their precision's own);
  max_autotune  torch.compile max-autotune in a process of its own with its own cap (its autotuning takes
                minutes when Inductor's caches are cold), after the other steps of every model, one model
                at a time with all that is left but the least the later ones need; eager timed beside it
                as an anchor.
Each method's row is written as soon as it is timed alone, then replaced by the side-by-side timing, so a
step killed halfway keeps what it finished; DIR/results.csv is written anew as each step ends, so a kill of
the whole run leaves the rows of every step that ended (a TERM also stops the step under way and writes the
summary). A method the CLI built that Python cannot load keeps the CLI's
own row (timed = autograph bench). Inductor's, Triton's and autograph's caches live in --cache-dir (default
DIR/cache) and are shared by all steps: later compiles reuse earlier kernels and autotuning results, and a
cache carried from an earlier run makes max-autotune warm.

DIR gets results.csv (the columns of `autograph bench` and bench/torch_compile_bench.py, then those of
EXTRA_FIELDS in gpu_table_rows.py), results.md and speedup.svg (bench/report.py, speedups over eager),
summary.txt (appended to: each step's result, seconds and cap, what was skipped and why, the ratios of
every method to eager, to the best torch.compile mode and to nimble) and logs/. --rehearse: CPU,
squeezenet, 1 warm-up and 2 runs, max-autotune skipped (it takes minutes on 2 cores); the harness end to
end, not a measurement.
Exit 0 when results.csv has a row of every method asked for (and not skipped by --rehearse) for every
model, 1 otherwise, 2 on bad arguments.
"""
import argparse
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Dict, List, Optional, Tuple

ROOT = Path(__file__).resolve().parents[1]
for _p in (ROOT, ROOT / "bench"):
    if str(_p) not in sys.path:
        sys.path.insert(0, str(_p))
# One module per concern: gpu_table_rows (the table: methods, columns, rows), gpu_table_worker (a step's
# child process) and gpu_table_steps (the parent running the steps within the budget). The table's names
# stay importable from here, the entry point.
from gpu_table_rows import (CLI_METHODS, FIELDS, METHODS, ORDER, PRECISION_METHODS, PROG, STAGES,  # noqa: E402,F401
                            check_table, merge, ratio_lines, stage_models, write_csv)
from gpu_table_steps import Steps, child_env, run_steps  # noqa: E402
from gpu_table_worker import warm, worker  # noqa: E402

DEFAULT_MODELS = ["squeezenet", "resnet50", "bert_base"]
REHEARSAL_SKIPS = {"torch_compile_max_autotune": "skipped in the CPU rehearsal: max-autotune's autotuning takes "
                                                 "minutes on 2 cores; it runs on the GPU only"}
# fp16 is for CUDA (autograph lowers nothing to it on a CPU; CPU autocast to float16 is no user's choice).
CPU_SKIPS = dict({m: "fp16 runs on CUDA only" for m in ("autograph_export_fp16", "torch_compile_autocast_fp16")},
                 autograph_export_tf32="TF32 is CUDA's")


def write_summary(args, steps: Steps, rows: List[dict], why: Dict[Tuple[str, str], str], wanted: List[str],
                  skipped: Dict[str, str], problems: List[str]) -> None:
    used = time.monotonic() - steps.start
    lines = ["", f"== one table: {args.device}, batch {args.batch}, models {' '.join(args.models)}; warm-up "
                 f"{args.warmup}, {args.runs} runs; budget {args.budget:g} s, used {used:.0f} s"
                 f"{' (CPU REHEARSAL: not a measurement)' if args.rehearse else ''}",
             f"{'step':<32}{'result':<11}{'s':>5}{'cap':>6}  note"]
    lines += [f"{r['step']:<32}{r['result']:<11}{r['seconds']:>5}{r['cap']:>6}  {r['note']}" for r in steps.records]
    for method, reason in skipped.items():
        lines.append(f"{method}: {reason}")
    for (model, method), reason in sorted(why.items()):
        lines.append(f"{model} {method}: {reason}")
    lines += ratio_lines(rows, args.models)
    lines.append("table: " + ("COMPLETE: every model has a row of every method asked for" if not problems
                              else "INCOMPLETE: " + "; ".join(problems)))
    text = "\n".join(lines) + "\n"
    with (args.out / "summary.txt").open("a") as f:
        f.write(text)
    print(text, end="", flush=True)


def plan(args) -> int:
    """The caps' arithmetic of a run of these models, methods and budget, printed; 1 when the float32 table
    (each model's cli and main steps) would not get at least their least time in the worst case."""
    skips = dict(REHEARSAL_SKIPS if args.rehearse else {}, **(CPU_SKIPS if args.device == "cpu" else {}))
    steps = run_steps(args, [m for m in args.methods if m not in skips], plan=True)
    short = [r["step"] for r in steps.records if r["step"].endswith((" cli", " main")) and r["result"] != "planned"]
    lines = [f"{PROG} plan: budget {args.budget:g} s, models {' '.join(args.models)}, every step taking its whole cap:"]
    lines += [f"  {r['step']:<32}{r['result']:<9}cap {r['cap']:>4} s  {r['note']}".rstrip() for r in steps.records]
    lines.append(f"{PROG} plan: " + ("the float32 table fits" if not short else
                                     "NO ROOM for " + ", ".join(short) + ": raise --budget or take fewer models"))
    print("\n".join(lines), flush=True)
    return 1 if short else 0


def parse_args(argv: Optional[List[str]]) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog=PROG, description=__doc__.split("\n\n")[0],
                                epilog=__doc__.split("\n\n", 1)[1], formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", type=Path, help="results.csv, results.md, summary.txt and logs/ go here")
    p.add_argument("--models", nargs="+", default=None, metavar="NAME", help=f"default: {' '.join(DEFAULT_MODELS)}")
    p.add_argument("--stage", type=int, choices=sorted(STAGES), default=None,
                   help="the models and methods of one stage of the GPU check (gpu_table_rows.STAGES) as defaults")
    p.add_argument("--stage-models", action="store_true", help="only print the models of --stage")
    p.add_argument("--device", choices=["cpu", "cuda"], default=None, help="default: cuda when available")
    p.add_argument("--batch", type=int, default=1)
    p.add_argument("--budget", type=float, default=None, help="seconds for everything (default 540; rehearsal 300)")
    p.add_argument("--warmup", type=int, default=None, help="warm-up calls per method (default 20; rehearsal 1)")
    p.add_argument("--runs", type=int, default=None, help="timed rounds (default 50; rehearsal 2)")
    p.add_argument("--methods", nargs="+", choices=ORDER, default=None,
                   help="default: all but jit, which `autograph bench` and the main step time anyway (the reference)")
    p.add_argument("--zoo", type=Path, default=Path(os.environ.get("AUTOGRAPH_ZOO_DIR", ROOT / "models" / "zoo")))
    p.add_argument("--cli", type=Path, default=Path(os.environ.get("AUTOGRAPH_CLI", ROOT / "build" / "autograph")),
                   help="the `autograph` executable (default $AUTOGRAPH_CLI, else build/autograph)")
    p.add_argument("--cache-dir", type=Path, default=None,
                   help="Inductor's, Triton's and autograph's caches (default OUT/cache); one carried from an "
                        "earlier run makes the compiles warm")
    p.add_argument("--no-warm", action="store_true", help="no warm step (a --warm-only run filled --cache-dir)")
    p.add_argument("--rehearse", action="store_true", help="CPU, squeezenet, 2 runs, no max-autotune: the harness only")
    p.add_argument("--warm-only", action="store_true", help="only the compilers' one-time costs, into --cache-dir")
    p.add_argument("--check", type=Path, default=None, metavar="CSV", help="only check a results.csv (exit 1: incomplete)")
    p.add_argument("--plan", action="store_true",
                   help="only the caps' arithmetic: each step's cap if every step took its whole cap (exit 1 when "
                        "a model's cli or main step would get less than its least or not run)")
    p.add_argument("--worker", help=argparse.SUPPRESS)
    p.add_argument("--rows", type=Path, help=argparse.SUPPRESS)
    p.add_argument("--deadline", type=float, help=argparse.SUPPRESS)
    p.add_argument("--anchor", default="", help=argparse.SUPPRESS)
    p.add_argument("--cli-cache", type=Path, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.stage:
        args.models = args.models or (None if args.rehearse else stage_models(args.stage))
        args.methods = args.methods or STAGES[args.stage][1]
    args.models = args.models or (["squeezenet"] if args.rehearse else DEFAULT_MODELS)
    args.device = args.device or ("cpu" if args.rehearse else None)
    if args.device is None:
        import torch
        args.device = "cuda" if torch.cuda.is_available() else "cpu"
    args.budget = args.budget or (300 if args.rehearse else 540)
    args.warmup = args.warmup if args.warmup is not None else (1 if args.rehearse else 20)
    args.runs = args.runs or (2 if args.rehearse else 50)
    args.methods = args.methods or (ORDER if args.worker else METHODS)
    if args.stage_models:
        print(" ".join(args.models))
        raise SystemExit(0)
    if not (args.out or args.check or args.worker or args.plan):
        p.error("--out is required")
    if args.plan and not args.out:
        args.out = Path(".")
    if args.out and not args.worker:
        args.out = args.out.resolve()
        args.cache_dir = (args.cache_dir or args.out / "cache").resolve()
    return args


def main(argv: Optional[List[str]] = None) -> int:
    args = parse_args(argv)
    if args.worker:
        return worker(args)
    if args.check:
        problems = check_table(args.check, args.models, [m for m in args.methods if m not in
                                                         (dict(REHEARSAL_SKIPS, **CPU_SKIPS) if args.rehearse else {})])
        print("\n".join(problems) if problems else f"{PROG}: {args.check}: complete")
        return 1 if problems else 0
    if args.plan:
        return plan(args)
    if args.warm_only:
        os.environ.update({k: v for k, v in child_env(args).items() if k.endswith(("CACHE_HOME", "CACHE_DIR"))})
        return warm(args)
    if args.batch < 1 or args.runs < 1 or args.warmup < 0:
        print(f"{PROG}: --batch and --runs must be >= 1 and --warmup >= 0", file=sys.stderr)
        return 2
    missing = [m for m in args.models if not (args.zoo / f"{m}.pt").is_file()]
    if missing:
        print(f"{PROG}: not in the zoo {args.zoo}: {' '.join(missing)} (models/export.py --out {args.zoo} --only ...)",
              file=sys.stderr)
        return 2
    shutil.rmtree(args.out / "steps", ignore_errors=True)  # an earlier run's rows must not pass for this one's
    (args.out / "results.csv").unlink(missing_ok=True)
    (args.out / "logs").mkdir(parents=True, exist_ok=True)
    skips = dict(REHEARSAL_SKIPS if args.rehearse else {}, **(CPU_SKIPS if args.device == "cpu" else {}))
    skipped = {m: why for m, why in skips.items() if m in args.methods}
    wanted = [m for m in args.methods if m not in skipped]
    steps = Steps(args)
    # A TERM (the command's own time running out) stops the step under way and keeps what finished:
    # results.csv and summary.txt are written below either way.
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(f"{PROG}: stopped by signal {signum}"))
    try:
        run_steps(args, wanted, steps=steps)
    except SystemExit as stop:
        skipped["(the rest)"] = f"{stop}: the steps after the last one recorded did not run"
    rows, why = merge(args)
    write_csv(args.out / "results.csv", rows)
    if rows:  # results.md and speedup.svg; speedups over eager
        subprocess.run([sys.executable, str(ROOT / "bench" / "report.py"), str(args.out), "--baseline", "eager"],
                       stdout=subprocess.DEVNULL, cwd=ROOT)
    problems = check_table(args.out / "results.csv", args.models, wanted)
    write_summary(args, steps, rows, why, wanted, skipped, problems)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
