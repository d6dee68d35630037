#!/usr/bin/env python3
"""One table of every inference method on one device, timed first and checked after, within a budget.

Usage: bench/gpu_table.py --out DIR [--models squeezenet resnet50 bert_base] [--device cuda|cpu] [--batch 1]
                          [--budget 540] [--warmup 20] [--runs 50] [--methods ...] [--zoo models/zoo]
                          [--cli build/autograph] [--cache-dir DIR] [--no-warm] [--rehearse]
       bench/gpu_table.py --warm-only --out DIR [--device cuda] [--cache-dir DIR]
       bench/gpu_table.py --check DIR/results.csv --models ... [--methods ...]

Methods (the CSV's `method`): eager, torch_compile_default, torch_compile_reduce_overhead,
torch_compile_max_autotune, jit_frozen, nimble, autograph_graph (the TorchScript path replayed as a CUDA
Graph), autograph_export (torch.export, then autograph.optimize: the export path), and jit (the zoo's
TorchScript module as loaded: the reference of max_abs_err / max_rel_err, as in `autograph bench`).

Each step is a child process under its own `timeout`; a step that fails or runs out of time does not stop
the others. Per model, while the budget lasts:
  cli           `autograph bench` builds and times jit, jit_frozen, nimble and autograph_graph (its own
                results.csv, kept as cli_median_ms) and saves the modules it built (--cache);
  main          one process: loads those modules (autograph.load), builds eager and torch.compile default
                and reduce-overhead, times all of them side by side, round-robin (warm-up, then --runs
                rounds; CUDA events on the current stream, as `autograph bench`), and only then checks
                outputs: on the timed input against jit and against eager with TF32 off, and on a SECOND
                input (other tensors, another seed) against eager with TF32 off; then builds the export
                path and does the same again with it among them (a crash there keeps the rest complete);
  max_autotune  torch.compile max-autotune in a process of its own with its own cap (its autotuning takes
                minutes when Inductor's caches are cold), after the other steps of every model, one model
                at a time with all that is left but the least the later ones need; eager timed beside it
                as an anchor.
Each method's row is written as soon as it is timed alone, then replaced by the side-by-side timing, so a
step killed halfway keeps what it finished. A method the CLI built that Python cannot load keeps the CLI's
own row (timed = autograph bench). Inductor's, Triton's and autograph's caches live in --cache-dir (default
DIR/cache) and are shared by all steps: later compiles reuse earlier kernels and autotuning results, and a
cache carried from an earlier run makes max-autotune warm.

DIR gets results.csv (the columns of `autograph bench` and bench/torch_compile_bench.py, then those of
EXTRA_FIELDS), results.md and speedup.svg (bench/report.py, speedups over eager), summary.txt (appended
to: each step's result, seconds and cap, what was skipped and why, the ratios of every method to eager,
to the best torch.compile mode and to nimble) and logs/. --rehearse: CPU, squeezenet, 1 warm-up and 2
runs, max-autotune skipped (it takes minutes on 2 cores); the harness end to end, not a measurement.
Exit 0 when results.csv has a row of every method asked for (and not skipped by --rehearse) for every
model, 1 otherwise, 2 on bad arguments.
"""
import argparse
import contextlib
import copy
import csv
import glob
import json
import os
import re
import shutil
import subprocess
import sys
import time
import warnings
from pathlib import Path
from typing import Callable, Dict, List, Optional, Tuple

ROOT = Path(__file__).resolve().parents[1]
for _p in (ROOT, ROOT / "bench"):
    if str(_p) not in sys.path:
        sys.path.insert(0, str(_p))
import torch_compile_bench as tcb  # noqa: E402  (inputs, eager model, errors, percentiles: one definition)

PROG = "gpu_table"
METHODS = ["eager", "torch_compile_default", "torch_compile_reduce_overhead", "torch_compile_max_autotune",
           "jit_frozen", "nimble", "autograph_graph", "autograph_export"]
CLI_METHODS = ["jit", "jit_frozen", "nimble", "autograph_graph"]  # what `autograph bench` builds (jit: its reference)
COMPILE_MODES = {"torch_compile_default": "default", "torch_compile_reduce_overhead": "reduce-overhead",
                 "torch_compile_max_autotune": "max-autotune"}
ORDER = ["eager", "jit"] + METHODS[1:]  # the CSV's row order per model
EXTRA_FIELDS = ["timed", "warmup", "runs", "tf32_off_max_abs_err", "tf32_off_max_rel_err", "input2_max_abs_err",
                "input2_max_rel_err", "cli_median_ms", "kept", "chosen", "stages", "streams", "cuda_graphs",
                "capture_failures", "note"]
FIELDS = tcb.CSV_FIELDS + EXTRA_FIELDS
DEFAULT_MODELS = ["squeezenet", "resnet50", "bert_base"]
REHEARSAL_SKIPS = {"torch_compile_max_autotune": "skipped in the CPU rehearsal: max-autotune's autotuning takes "
                                                 "minutes on 2 cores; it runs on the GPU only"}
# Caps per step (seconds) and the least time worth starting one with. On an H100 (bench/results/gpu-2026-11-26b-h100):
# torch.compile default 10-14 s per model, the export path 23 s (resnet50) to 77 s (squeezenet, with Inductor's
# one-time 46 s CPU-ISA check, which the warm step pays instead); `autograph bench` of these methods a few seconds
# of building per model.
CAPS = {"warm": 120, "cli": 90, "main": 240, "max_autotune": 180}
LEAST = {"warm": 20, "cli": 20, "main": 45, "max_autotune": 40}
RESERVE_S = 15  # for merging, the report and the summary
# `autograph bench`'s cap at least (up to CAPS["cli"]): killed, it writes no results.csv and saves no module, and
# the main step then has none of jit_frozen, nimble and autograph_graph to load.
CLI_FLOOR_S = 60
PASS1_SHARE = 0.7  # of a model's share of the budget, for cli + main when max-autotune waits for its own pass
# The least time left in the main step for building one more method (else it is skipped and said so).
LEAST_BUILD_S = {"torch_compile_default": 15, "torch_compile_reduce_overhead": 10, "torch_compile_max_autotune": 30,
                 "autograph_export": 20}
CAPTURE_FAILED = "capturing a CUDA Graph failed"


# ------------------------------------------------------------------------------------------------
# The child processes: one step of one model (--worker), or the compilers' one-time costs (--warm-only).

def one_line(e: BaseException) -> str:
    return tcb.one_line(e)


def left_s(deadline: float) -> float:
    return deadline - time.time()


@contextlib.contextmanager
def tf32_off():
    """Eager in full float32: the reference every method's error is measured against (cuDNN convolutions
    run in TF32 by default, and the zoo's traced convolutions have allow_tf32=True fixed in)."""
    import torch
    old = torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = False
    try:
        yield
    finally:
        torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = old


def cloned(value) -> list:
    """The output tensors, copied: under CUDA Graphs (reduce-overhead, autograph) they live in the
    graph's memory and the next call overwrites them."""
    return [t.detach().clone() for t in tcb.flatten_tensors(value)]


def cli_module_path(cache: Path, model: str, batch: int, device: str, method: str) -> Optional[Path]:
    """The module `autograph bench --cache` saved for (model, batch, device, method): NAME-bB-DEVICE-METHOD-HASH.pt."""
    found = sorted(glob.glob(str(cache / f"{model}-b{batch}-{device}-{method}-*.pt")), key=os.path.getmtime)
    return Path(found[-1]) if found else None


def cuda_graph_plans(exported) -> int:
    """Plans in the optimized program set to replay as a CUDA Graph: each autograph::execute call's program
    (and its plans for other shapes) says "cuda_graph": true. Each is captured once per input shape."""
    count = 0
    for node in exported.graph_module.graph.nodes:
        if node.op == "call_function" and "autograph.execute" in str(node.target):
            count += sum(len(re.findall(r'"cuda_graph"\s*:\s*true', a)) for a in node.args if isinstance(a, str))
    return count


def build_method(method: str, ctx: dict) -> Tuple[Callable[[list], object], dict]:
    """(run(inputs), row entries: search_s and what the method reports). The first call on the timed input,
    which compiles or captures, is part of search_s; its outputs are kept for the check after timing."""
    import torch
    model, device, info = ctx["model"], ctx["device"], {}
    start = time.perf_counter()
    if method == "eager":
        run = lambda xs: model(*xs)  # noqa: E731
    elif method == "jit":
        scripted = ctx["scripted"]
        run = lambda xs: scripted(*xs)  # noqa: E731
    elif method in CLI_METHODS:
        import autograph
        path = cli_module_path(ctx["cli_cache"], ctx["name"], ctx["batch"], str(device), method)
        if path is None:
            raise RuntimeError(f"`autograph bench` saved no module of it in {ctx['cli_cache']}")
        module = autograph.load(path, map_location=device)
        note = Path(str(path) + ".json")
        info["search_s"] = json.loads(note.read_text()).get("search_s", 0.0) if note.exists() else 0.0
        run = lambda xs: module(*xs)  # noqa: E731
    elif method in COMPILE_MODES:
        mode = COMPILE_MODES[method]
        # A copy per mode: the modes' compiled graphs never share a dynamo cache entry.
        compiled = torch.compile(copy.deepcopy(model), mode=mode)
        graphs = device.type == "cuda" and mode in ("reduce-overhead", "max-autotune")

        def run(xs):
            if graphs:  # each call a new cudagraph-tree generation (the previous outputs may be overwritten)
                torch.compiler.cudagraph_mark_step_begin()
            return compiled(*xs)
        from torch._dynamo.utils import counters
        skips = counters["inductor"]["cudagraph_skips"]
        with torch.inference_mode():
            ctx["first"][method] = cloned(run(ctx["x1"]))
        if graphs and counters["inductor"]["cudagraph_skips"] > skips:
            info["note"] = f"Inductor skipped CUDA Graphs {counters['inductor']['cudagraph_skips'] - skips} time(s)"
    elif method == "autograph_export":
        import autograph
        # As bench/torch_compile_bench.py --export-path and bench/export_path.py: export, then optimize.
        ep = torch.export.export(model, tuple(ctx["x1"]), strict=False)
        optimized, report = autograph.optimize(ep)
        module = optimized.module()
        run = lambda xs: module(*xs)  # noqa: E731
        inductor = report.get("inductor") or {}
        info.update(kept=inductor.get("kept", "aten"), chosen=report.get("chosen") or "",
                    stages=report.get("stages", ""), streams=report.get("streams", ""),
                    cuda_graphs=cuda_graph_plans(optimized))
        notes = [f"fallback: {report['fallback']}"] if report.get("fallback") else []
        notes += [f"{k}: {v}" for k, v in (inductor.get("errors") or {}).items()]
        if notes:
            info["note"] = "; ".join(notes)[:300]
    else:
        raise ValueError(f"unknown method {method}")
    if method not in ctx["first"]:
        with torch.inference_mode():
            ctx["first"][method] = cloned(run(ctx["x1"]))
    ctx["sync"]()
    info.setdefault("search_s", time.perf_counter() - start)
    return run, info


def time_side_by_side(calls: Dict[str, Callable[[], object]], warmup: int, runs: int,
                      cuda: bool) -> Dict[str, List[float]]:
    """Milliseconds per call, the methods in turn each round (as `autograph bench`): drifts of the clock or of
    other load fall on every method alike. CUDA: events on the current stream around each call."""
    import torch
    for call in calls.values():
        for _ in range(warmup):
            call()
    if cuda:
        torch.cuda.synchronize()
    samples: Dict[str, List[float]] = {name: [] for name in calls}
    for _ in range(runs):
        for name, call in calls.items():
            if cuda:
                start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                start.record()
                call()
                end.record()
                end.synchronize()
                samples[name].append(start.elapsed_time(end))
            else:
                t0 = time.perf_counter()
                call()
                samples[name].append((time.perf_counter() - t0) * 1e3)
    return samples


def write_json(path: Path, value) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(value, indent=1))
    tmp.replace(path)  # atomic: a step killed while writing leaves the previous version


def timing_entries(ms: List[float]) -> dict:
    return {"median_ms": tcb.percentile(ms, 0.5), "p10_ms": tcb.percentile(ms, 0.1), "p90_ms": tcb.percentile(ms, 0.9)}


def prepare(args) -> dict:
    """The zoo module, the eager module with its weights, both inputs and the references, made before
    anything is compiled (so that switching TF32 cannot touch a compiled graph)."""
    import torch
    device = torch.device(args.device)
    name = args.worker
    scripted = torch.jit.load(str(args.zoo / f"{name}.pt"), map_location=device).eval()
    model = tcb.load_eager_model(name, scripted, device)
    spec = args.zoo / f"{name}.json"
    x1 = tcb.make_inputs(spec, args.batch, device)  # seed 0: the values `autograph bench` times
    x2 = tcb.make_inputs(spec, args.batch, device, seed=1)  # other tensors, other values
    sync = torch.cuda.synchronize if device.type == "cuda" else (lambda: None)
    with torch.inference_mode():
        ref_jit = cloned(scripted(*x1))
        with tf32_off():
            ref1, ref2 = cloned(model(*x1)), cloned(model(*x2))
    return dict(name=name, device=device, batch=args.batch, scripted=scripted, model=model, x1=x1, x2=x2,
                ref_jit=ref_jit, ref1=ref1, ref2=ref2, sync=sync, first={}, cli_cache=args.cli_cache)


def captures_failed(caught) -> int:
    return sum(CAPTURE_FAILED in str(w.message) for w in caught)


def log_warnings(prefix: str, caught) -> None:
    """Each distinct warning once, with its count, into the step's log (which the summary reads: failed CUDA
    Graph captures are counted there); deprecation notices left out."""
    counts: Dict[str, int] = {}
    for w in caught:
        if not issubclass(w.category, (DeprecationWarning, FutureWarning)):
            text = str(w.message).splitlines()[0][:300] if str(w.message) else w.category.__name__
            counts[text] = counts.get(text, 0) + 1
    for text, n in counts.items():
        print(f"{prefix}: warning{f' ({n} times)' if n > 1 else ''}: {text}", flush=True)


def build_and_time_alone(method: str, ctx: dict, args, base: dict, rows_dir: Path):
    """The method built and timed alone, its row written; (run, row), or None when it failed or did not fit."""
    import torch
    name, cuda = ctx["name"], ctx["device"].type == "cuda"
    if left_s(args.deadline) < LEAST_BUILD_S.get(method, 3):
        why = f"not built: {max(left_s(args.deadline), 0):.0f} s left of the step's cap"
        write_json(rows_dir / f"{method}.skipped.json", {"why": why})
        print(f"{PROG}: {name} {method}: {why}", flush=True)
        return None
    print(f"{PROG}: {name} {method}: building", flush=True)
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            run, info = build_method(method, ctx)
            x1 = ctx["x1"]
            with torch.inference_mode():
                ms = time_side_by_side({method: lambda: run(x1)}, args.warmup, args.runs, cuda)[method]
    except Exception as e:  # noqa: BLE001 - one method failing must not lose the others
        write_json(rows_dir / f"{method}.skipped.json", {"why": f"failed: {one_line(e)}"})
        print(f"{PROG}: {name} {method}: failed: {one_line(e)}", flush=True)
        if cuda:
            torch.cuda.empty_cache()
        return None
    log_warnings(f"{PROG}: {name} {method}", caught)
    row = dict(base, method=method, timed="alone", capture_failures=captures_failed(caught), **info,
               **timing_entries(ms))
    write_json(rows_dir / f"{method}.json", row)
    print(f"{PROG}: {name} {method}: {row['median_ms']:.3f} ms alone, built in {row['search_s']:.1f} s", flush=True)
    return run, row


# Built last, in a phase of its own: the export path crashed its process on the GPU before
# (bench/results/gpu-2026-11-26-h100/export-path-segfault.log), and once in a CPU rehearsal. By then every
# other method of the step is timed side by side and checked, so a crash loses only its row.
LAST_PHASE = ["autograph_export"]


def worker(args) -> int:
    """One step of one model, in two phases (all methods but LAST_PHASE, then those): each method built and
    timed alone (row written), then every method built so far timed side by side (rows replaced), then the
    new methods' outputs checked (rows completed)."""
    import torch
    warnings.filterwarnings("ignore", r"`torch\.jit\.\w+` is deprecated", DeprecationWarning)
    sys.path.insert(0, str(ROOT / "python"))
    rows_dir: Path = args.rows
    rows_dir.mkdir(parents=True, exist_ok=True)
    ctx = prepare(args)
    runs, rows = {}, {}
    phases = [[m for m in args.methods if m not in LAST_PHASE], [m for m in args.methods if m in LAST_PHASE]]
    for phase in phases:
        new = {}
        for method in phase:
            made = build_and_time_alone(method, ctx, args, base_row(ctx, args), rows_dir)
            if made:
                runs[method], new[method] = made
        rows.update(new)
        if not new:
            continue
        if args.anchor and args.anchor not in runs:
            try:
                runs[args.anchor] = build_method(args.anchor, ctx)[0]  # timed beside the others, no row of its own
            except Exception as e:  # noqa: BLE001 - the rows stand without it
                print(f"{PROG}: {ctx['name']} {args.anchor} (anchor): failed: {one_line(e)}", flush=True)
        time_built(ctx, args, runs, rows, rows_dir)
        check_outputs(ctx, runs, new, rows_dir)
    return 0 if rows else 1


def base_row(ctx: dict, args) -> dict:
    return {"model": ctx["name"], "batch": args.batch, "device": str(ctx["device"]), "warmup": args.warmup,
            "runs": args.runs}


def time_built(ctx: dict, args, runs: Dict[str, Callable[[list], object]], rows: Dict[str, dict],
               rows_dir: Path) -> None:
    """Every method built so far timed side by side; their rows get these timings."""
    import torch
    x1 = ctx["x1"]
    calls = {m: (lambda r: lambda: r(x1))(r) for m, r in runs.items()}
    if len(calls) < 2:
        return
    print(f"{PROG}: {ctx['name']}: timing {', '.join(calls)} side by side", flush=True)
    with warnings.catch_warnings(record=True) as caught, torch.inference_mode():
        warnings.simplefilter("always")
        samples = time_side_by_side(calls, args.warmup, args.runs, ctx["device"].type == "cuda")
    log_warnings(f"{PROG}: {ctx['name']} (side by side)", caught)  # not attributable to one method
    for method, row in rows.items():
        row.update(timing_entries(samples[method]), timed=f"side by side ({len(calls)} methods)")
        if args.anchor in samples and args.anchor not in rows:
            anchor = f"{args.anchor} in the same process: {tcb.percentile(samples[args.anchor], 0.5):.4g} ms"
            row["note"] = "; ".join(n for n in [row.get("note"), anchor] if n)
        write_json(rows_dir / f"{method}.json", row)


def check_outputs(ctx: dict, runs: Dict[str, Callable[[list], object]], rows: Dict[str, dict], rows_dir: Path) -> None:
    """After timing: the timed input's outputs (kept from the first call) against jit and against eager with
    TF32 off, then a call on the second input (other tensors, other values) against eager with TF32 off:
    a module that kept reading the first input's memory (a CUDA Graph's stale buffer) fails here."""
    import torch
    for method, row in rows.items():
        try:
            first = ctx["first"][method]
            row["max_abs_err"], row["max_rel_err"] = tcb.output_errors(first, ctx["ref_jit"])
            row["tf32_off_max_abs_err"], row["tf32_off_max_rel_err"] = tcb.output_errors(first, ctx["ref1"])
            with torch.inference_mode():
                second = cloned(runs[method](ctx["x2"]))
            row["input2_max_abs_err"], row["input2_max_rel_err"] = tcb.output_errors(second, ctx["ref2"])
        except Exception as e:  # noqa: BLE001 - reported in the row
            row["note"] = (row.get("note", "") + f"; check failed: {one_line(e)}").lstrip("; ")
        write_json(rows_dir / f"{method}.json", row)
        print(f"{PROG}: {ctx['name']} {method}: error vs TF32-off eager {row.get('tf32_off_max_rel_err', 'n/a')}, "
              f"second input {row.get('input2_max_rel_err', 'n/a')} (relative to the output's scale)", flush=True)


def warm(args) -> int:
    """The compilers' one-time costs, paid into the shared on-disk caches before any step is timed:
    Inductor's check of the CPU's vector ISA (46 s in a fresh cache on the H100 machine, paid again by the
    first export-path optimize otherwise) and a tiny torch.compile (Inductor's and Triton's start-up)."""
    import torch
    from torch._inductor import cpu_vec_isa
    start = time.perf_counter()
    isa = cpu_vec_isa.valid_vec_isa_list()
    print(f"{PROG}: CPU vector ISA check: {[str(i) for i in isa]} in {time.perf_counter() - start:.1f} s", flush=True)
    start = time.perf_counter()
    tcb.warm_up_compiler(torch.device(args.device))
    print(f"{PROG}: torch.compile start-up on {args.device}: {time.perf_counter() - start:.1f} s", flush=True)
    return 0


# ------------------------------------------------------------------------------------------------
# The parent: steps under their caps, the merged table, the summary and the check.

class Steps:
    """Runs each step as a child process under timeout(1) within the budget and keeps a record of it."""

    def __init__(self, args):
        self.args, self.records = args, []
        self.start = time.monotonic()
        self.deadline = self.start + args.budget
        self.env = child_env(args)

    def left(self) -> float:
        return self.deadline - time.monotonic() - RESERVE_S

    def skip(self, label: str, why: str) -> dict:
        record = {"step": label, "result": "skipped", "seconds": 0, "cap": 0, "note": why}
        self.records.append(record)
        print(f"{PROG}: {label}: skipped: {why}", flush=True)
        return record

    def run(self, label: str, kind: str, cmd: Callable[[int], List[str]], cap: float) -> dict:
        """cmd(cap) under `timeout -k 10 cap` (its children too: timeout signals its process group); its
        output into logs/LABEL.log. A cap below the step's least time skips it, saying so."""
        cap = int(min(cap, CAPS[kind], self.left()))
        if cap < LEAST[kind]:
            return self.skip(label, f"not reached: {max(int(self.left()), 0)} s left of the {self.args.budget:g} s "
                                    f"budget, the step needs at least {LEAST[kind]} s")
        cmd = cmd(cap)
        log = self.args.out / "logs" / (label.replace(" ", "-") + ".log")
        print(f"{PROG}: {label} (cap {cap} s, log {log.relative_to(self.args.out)})", flush=True)
        t0 = time.monotonic()
        with log.open("w") as f:
            try:
                rc = subprocess.run(["timeout", "-k", "10", str(cap)] + cmd, stdout=f, stderr=subprocess.STDOUT,
                                    env=self.env, cwd=ROOT, timeout=cap + 30).returncode
            except subprocess.TimeoutExpired:
                rc = 124
        seconds = round(time.monotonic() - t0)
        text = log.read_text(errors="replace")
        if rc == 0:
            result, note = "passed", ""
        elif rc in (124, 137):
            result, note = "timed out", f"killed at its cap of {cap} s"
        else:
            result = "FAILED"
            lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
            note = f"exit {rc}: " + (lines[-1][:240] if lines else "no output")
        failed = capture_failures_in(text)
        if failed:
            note = (note + f"; {failed} failed CUDA Graph capture(s) in the log").lstrip("; ")
        record = {"step": label, "result": result, "seconds": seconds, "cap": cap, "note": note}
        self.records.append(record)
        print(f"{PROG}: {label}: {result} in {seconds} s{(': ' + note) if note else ''}", flush=True)
        return record


def capture_failures_in(log: str) -> int:
    """Failed CUDA Graph captures in a step's log: a line each from the CLI, a counted line from log_warnings."""
    total = 0
    for line in log.splitlines():
        if CAPTURE_FAILED in line:
            counted = re.search(r"warning \((\d+) times\)", line)
            total += int(counted.group(1)) if counted else 1
    return total


def child_env(args) -> dict:
    """The caches of every compiler in one folder shared by all steps (warm where an earlier step or an
    earlier run filled them); the checkout's python/ and bench/ importable."""
    env = dict(os.environ)
    cache = args.cache_dir
    env.update(XDG_CACHE_HOME=str(cache), TORCHINDUCTOR_CACHE_DIR=str(cache / "inductor"),
               TRITON_CACHE_DIR=str(cache / "triton"), PYTHONUNBUFFERED="1")
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), str(ROOT / "python")] + [p for p in [env.get("PYTHONPATH")] if p])
    return env


def worker_cmd(args, model: str, step: str, methods: List[str], cap: int, anchor: str = "") -> List[str]:
    # -X faulthandler: a crash (the export path segfaulted on the GPU before) leaves its Python stack in the log.
    cmd = [sys.executable, "-X", "faulthandler", str(Path(__file__).resolve()), "--worker", model, "--methods", *methods,
           "--rows", str(args.out / "steps" / model / step / "rows"), "--deadline", f"{time.time() + cap - 5:.0f}",
           "--device", args.device, "--batch", str(args.batch), "--warmup", str(args.warmup), "--runs", str(args.runs),
           "--zoo", str(args.zoo), "--cli-cache", str(args.cache_dir / "bench")]
    return cmd + (["--anchor", anchor] if anchor else [])


def run_steps(args, wanted: List[str]) -> Steps:
    """Warm-up; then per model `autograph bench` and the main process; then max-autotune per model with what
    is left: every model's table is complete but for max-autotune before max-autotune may take its time."""
    steps = Steps(args)
    if not args.no_warm:
        steps.run("warm", "warm", lambda cap: [sys.executable, str(Path(__file__).resolve()), "--warm-only", "--out",
                                               str(args.out), "--device", args.device, "--cache-dir", str(args.cache_dir)],
                  CAPS["warm"])
    cli_methods = [m for m in CLI_METHODS if m in wanted and m != "jit"]  # jit: always, as the CLI's reference
    main_methods = [m for m in ["eager", "jit"] + cli_methods + ["torch_compile_default", "torch_compile_reduce_overhead",
                                                                  "autograph_export"] if m in wanted + ["jit"]]
    autotune = "torch_compile_max_autotune" in wanted
    n = len(args.models)
    for i, model in enumerate(args.models):
        share = steps.left() / (n - i) * (PASS1_SHARE if autotune else 1.0)
        t0 = time.monotonic()
        if cli_methods:
            if not Path(args.cli).is_file():
                steps.skip(f"{model} cli", f"no `autograph` CLI at {args.cli} (--cli)")
            else:
                steps.run(f"{model} cli", "cli",
                          lambda cap: [str(args.cli), "bench", model, "--zoo", str(args.zoo), "--device", args.device,
                           "--batch", str(args.batch), "--methods", "jit", *cli_methods, "--warmup", str(args.warmup),
                           "--runs", str(args.runs), "--out", str(args.out / "steps" / model / "cli"),
                           "--cache", str(args.cache_dir / "bench")], max(share * 0.4, CLI_FLOOR_S))
        cap = max(share - (time.monotonic() - t0), LEAST["main"])
        steps.run(f"{model} main", "main", lambda c: worker_cmd(args, model, "main", main_methods, c), cap)
    for i, model in enumerate(args.models if autotune else []):
        # All that is left but the least for each model after it: a cold autotuning that does not finish
        # in an equal share would give no row at all, where the first models' finishing gives some.
        cap = steps.left() - LEAST["max_autotune"] * (n - i - 1)
        steps.run(f"{model} max_autotune", "max_autotune",
                  lambda c: worker_cmd(args, model, "max_autotune", ["torch_compile_max_autotune"], c, anchor="eager"),
                  cap)
    return steps


def read_csv(path: Path) -> List[dict]:
    if not path.is_file():
        return []
    with path.open(newline="") as f:
        return list(csv.DictReader(f))


def merge(args) -> Tuple[List[dict], Dict[Tuple[str, str], str]]:
    """Every model's rows from its steps: the driver's where it timed the method, else `autograph bench`'s own
    (timed = autograph bench); cli_median_ms = `autograph bench`'s median of the method. Also why each
    method that has no driver row has none."""
    rows, why = [], {}
    for model in args.models:
        step_dir = args.out / "steps" / model
        cli = {r["method"]: r for r in read_csv(step_dir / "cli" / "results.csv")}
        by_method: Dict[str, dict] = {}
        for step in ("main", "max_autotune"):
            for f in sorted((step_dir / step / "rows").glob("*.json")):
                if f.name.endswith(".skipped.json"):
                    why[(model, f.name[:-len(".skipped.json")])] = json.loads(f.read_text())["why"]
                else:
                    row = json.loads(f.read_text())
                    by_method[row["method"]] = row
        for method, r in cli.items():
            if method not in by_method:
                note = "timed by `autograph bench` only" + (f" (the driver: {why[(model, method)]})"
                                                             if (model, method) in why else "")
                by_method[method] = dict(r, timed="autograph bench", warmup=args.warmup, runs=args.runs, note=note)
            by_method[method]["cli_median_ms"] = r["median_ms"]
        rows += [by_method[m] for m in ORDER if m in by_method]
        rows += [r for m, r in by_method.items() if m not in ORDER]
    return rows, why


def write_csv(path: Path, rows: List[dict]) -> None:
    with path.open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=FIELDS, extrasaction="ignore", lineterminator="\n")
        writer.writeheader()
        for row in rows:
            cells = {k: (f"{v:.6g}" if isinstance(v, float) else v) for k, v in row.items()}
            for k in tcb.CSV_FIELDS[4:]:  # bench/report.py reads these as numbers: nan where unmeasured
                if cells.get(k) in (None, ""):
                    cells[k] = "nan"
            writer.writerow(cells)


def check_table(csv_path: Path, models: List[str], methods: List[str]) -> List[str]:
    """What results.csv lacks: a column of FIELDS, a row with a median for each (model, method), a known method
    name, and the export path's report entries. Empty when complete."""
    if not csv_path.is_file():
        return [f"{csv_path} was not written"]
    with csv_path.open(newline="") as f:
        reader = csv.DictReader(f)
        header, rows = reader.fieldnames or [], list(reader)
    problems = [f"column {c} missing" for c in FIELDS if c not in header]
    if problems:
        return problems
    known = set(ORDER)
    problems += [f"unknown method name {r['method']!r} ({r['model']})" for r in rows if r["method"] not in known]
    have = {(r["model"], r["method"]): r for r in rows}
    for model in models:
        for method in methods:
            r = have.get((model, method))
            try:
                ok = r is not None and float(r["median_ms"]) > 0
            except ValueError:
                ok = False
            if not ok:
                problems.append(f"{model}: no {method} row with a median")
            elif method == "autograph_export" and not (r["kept"] and r["streams"] and r["cuda_graphs"]):
                problems.append(f"{model}: the autograph_export row lacks kept / streams / cuda_graphs")
    return problems


def number(row: Optional[dict], key: str = "median_ms") -> Optional[float]:
    try:
        value = float(row[key]) if row else None
    except (KeyError, TypeError, ValueError):
        return None
    return value if value is not None and value == value else None  # NaN: unmeasured


def ratio_lines(rows: List[dict], models: List[str]) -> List[str]:
    """Per model: each method's median and its speedups (the other's median / this one's: above 1 = faster) over
    eager, the best torch.compile mode and nimble; errors on the second input against TF32-off eager, ⚠ where
    above both 1e-3 and 10 times eager's own (TF32 alone makes eager differ from the TF32-off reference)."""
    lines = []
    for model in models:
        mine = {r["method"]: r for r in rows if r["model"] == model}
        if not mine:
            continue
        compiled = [(number(r), m) for m, r in mine.items() if m.startswith("torch_compile_") and number(r)]
        best_ms, best = min(compiled) if compiled else (None, "")
        eager_ms, nimble_ms = number(mine.get("eager")), number(mine.get("nimble"))
        eager_err = number(mine.get("eager"), "input2_max_rel_err") or 0.0
        lines += [f"{model}:", f"  {'method':<31}{'median ms':>10}{'x eager':>9}{'x best compile':>16}"
                               f"{'x nimble':>10}  {'2nd-input err':>13}  timed"]
        for method, r in mine.items():
            ms = number(r)
            cells = [f"{(ref / ms):.2f}" if ref and ms else "–" for ref in (eager_ms, best_ms, nimble_ms)]
            err = number(r, "input2_max_rel_err")
            flag = " ⚠" if err is not None and err > max(1e-3, 10 * eager_err) else ""
            lines.append(f"  {method:<31}{(f'{ms:.3f}' if ms else '–'):>10}{cells[0]:>9}{cells[1]:>16}{cells[2]:>10}"
                         f"  {(f'{err:.1e}' if err is not None else 'not checked'):>13}{flag}  {r.get('timed', '')}")
        if best:
            lines.append(f"  (best torch.compile mode: {best})")
    return lines


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


def parse_args(argv: Optional[List[str]]) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog=PROG, description=__doc__.split("\n\n")[0],
                                epilog=__doc__.split("\n\n", 1)[1], formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", type=Path, help="results.csv, results.md, summary.txt and logs/ go here")
    p.add_argument("--models", nargs="+", default=None, metavar="NAME", help=f"default: {' '.join(DEFAULT_MODELS)}")
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
    p.add_argument("--worker", help=argparse.SUPPRESS)
    p.add_argument("--rows", type=Path, help=argparse.SUPPRESS)
    p.add_argument("--deadline", type=float, help=argparse.SUPPRESS)
    p.add_argument("--anchor", default="", help=argparse.SUPPRESS)
    p.add_argument("--cli-cache", type=Path, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    args.models = args.models or (["squeezenet"] if args.rehearse else DEFAULT_MODELS)
    args.device = args.device or ("cpu" if args.rehearse else None)
    if args.device is None:
        import torch
        args.device = "cuda" if torch.cuda.is_available() else "cpu"
    args.budget = args.budget or (300 if args.rehearse else 540)
    args.warmup = args.warmup if args.warmup is not None else (1 if args.rehearse else 20)
    args.runs = args.runs or (2 if args.rehearse else 50)
    args.methods = args.methods or (ORDER if args.worker else METHODS)
    if not (args.out or args.check or args.worker):
        p.error("--out is required")
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
                                                         (REHEARSAL_SKIPS if args.rehearse else {})])
        print("\n".join(problems) if problems else f"{PROG}: {args.check}: complete")
        return 1 if problems else 0
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
    (args.out / "logs").mkdir(parents=True, exist_ok=True)
    skipped = {m: why for m, why in (REHEARSAL_SKIPS if args.rehearse else {}).items() if m in args.methods}
    wanted = [m for m in args.methods if m not in skipped]
    steps = run_steps(args, wanted)
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
