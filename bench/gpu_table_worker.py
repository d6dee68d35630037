"""bench/gpu_table.py's child processes: one step of one model (--worker), or the compilers' one-time costs
(--warm-only)."""
import contextlib
import copy
import glob
import json
import os
import re
import sys
import time
import warnings
from pathlib import Path
from typing import Callable, Dict, List, Optional, Tuple

import torch_compile_bench as tcb
from gpu_table_profile import profile_replays
from gpu_table_rows import CAPTURE_FAILED, CLI_METHODS, COMPILE_MODES, PRECISION_METHODS, PROG

ROOT = Path(__file__).resolve().parents[1]
# The least time left in the main step for the profiles after the rows (bench/gpu_table_profile.py).
LEAST_PROFILE_S = 15
# The least time left in the main step for building one more method (else it is skipped and said so).
LEAST_BUILD_S = {"torch_compile_default": 15, "torch_compile_reduce_overhead": 10, "torch_compile_max_autotune": 30,
                 "autograph_export": 20, "autograph_export_tf32": 20, "autograph_export_bf16": 20, "autograph_export_fp16": 20,
                 "torch_compile_autocast_bf16": 15, "torch_compile_autocast_fp16": 15, "autograph_graph_bf16": 20}


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


def torchscript_lowered(model, x1, device, info: dict) -> Callable[[list], object]:
    """The TorchScript path with option precision bf16: its lowered plan is judged against its float32 plan,
    both timed side by side while optimizing (the report's precision entry, into the row's note)."""
    import autograph
    optimized, report = autograph.optimize(model, list(x1), device=str(device), precision="bf16")
    decision = report.get("precision") or {}
    info.update(precision=decision.get("kept", "fp32"), stages=report.get("stages", ""),
                streams=report.get("streams", ""), kept=f"{report.get('ops_lowered', 0)} operators lowered")
    times = (f"float32 plan {decision['fp32_ms']:.4g} ms, lowered {decision['lowered_ms']:.4g} ms at optimize"
             if decision.get("fp32_ms") and decision.get("lowered_ms") else "")
    info["note"] = "; ".join(n for n in [times, decision.get("note") or "", f"error {decision.get('error')}"] if n)[:300]
    return lambda xs: optimized(*xs)


def export_path(method: str, ctx: dict, info: dict) -> Callable[[list], object]:
    """The export path's run of `ctx`'s model (option precision for the rows below float32), its report's
    kept candidate, plan and notes in `info`. As bench/torch_compile_bench.py --export-path and
    bench/export_path.py: export, then optimize."""
    import torch
    import autograph
    ep = torch.export.export(ctx["model"], tuple(ctx["x1"]), strict=False)
    precision = PRECISION_METHODS.get(method)
    optimized, report = autograph.optimize(ep, **({"precision": precision} if precision else {}))
    module = optimized.module()
    inductor = report.get("inductor") or {}
    # The whole report beside the rows (logs.tar.gz carries it): what each candidate measured, and why
    # the kept one won. Not *.json: merge() reads those as rows.
    (ctx["rows_dir"] / f"{method}.report").write_text(json.dumps(report, indent=1, default=str))
    timed = {name: c.get("median_ms") for name, c in (inductor.get("candidates") or {}).items()}
    print(f"{PROG}: {ctx['name']} {method}: kept {inductor.get('kept', 'aten')} of {timed}; dropped "
          f"{sorted((inductor.get('dropped') or {}))}", flush=True)
    info.update(kept=inductor.get("kept", "aten"), chosen=report.get("chosen") or "",
                stages=report.get("stages", ""), streams=report.get("streams", ""),
                cuda_graphs=cuda_graph_plans(optimized))
    if precision:  # what the kept program computes in (fp32 where nothing lowered met the tolerance)
        info["precision"] = (inductor.get("precision") or {}).get("kept", "fp32")
    notes = [f"fallback: {report['fallback']}"] if report.get("fallback") else []
    notes += [f"{k}: {v}" for k, v in (inductor.get("errors") or {}).items()]
    if notes:
        info["note"] = "; ".join(notes)[:300]
    return lambda xs: module(*xs)


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
        if path is not None:
            module = autograph.load(path, map_location=device)
            note = Path(str(path) + ".json")
            info["search_s"] = json.loads(note.read_text()).get("search_s", 0.0) if note.exists() else 0.0
        elif method == "jit_frozen":
            # `autograph bench` caches no module that does not load back (on a CPU, optimize_for_inference's
            # oneDNN constants): made here as the CLI makes it.
            module = torch.jit.optimize_for_inference(torch.jit.freeze(ctx["scripted"].eval()))
        else:
            raise RuntimeError(f"`autograph bench` saved no module of it in {ctx['cli_cache']}")
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
    elif method.startswith("torch_compile_autocast_"):
        # What a user runs for reduced precision with torch.compile: the default mode under autocast.
        compiled = torch.compile(copy.deepcopy(model))
        dtype = {"bf16": torch.bfloat16, "fp16": torch.float16}[PRECISION_METHODS[method]]

        def run(xs):
            with torch.autocast(device.type, dtype=dtype):
                return compiled(*xs)
        info["precision"] = PRECISION_METHODS[method]
    elif method == "autograph_graph_bf16":
        run = torchscript_lowered(model, ctx["x1"], device, info)
    elif method.startswith("autograph_export"):
        run = export_path(method, ctx, info)
    else:
        raise ValueError(f"unknown method {method}")
    if method not in ctx["first"]:
        with torch.inference_mode():
            ctx["first"][method] = cloned(run(ctx["x1"]))
    ctx["sync"]()
    info.setdefault("search_s", time.perf_counter() - start)
    return run, info


def time_side_by_side(calls: Dict[str, Callable[[], object]], device, args) -> Dict[str, List[float]]:
    """Milliseconds of each call per round, by autograph's one timing policy (autograph.export.timing, as
    optimize's candidates, the .pt2 CLI's bench and bench/export_path.py): --warmup untimed calls of each
    first, then --runs rounds with the methods in turn, so drifts of the clock or of other load fall on
    every method alike; CUDA events on the current stream, and on CPU each timed call after untimed
    calls of the same method (the others' thread pools go idle meanwhile). Not raced: every method runs
    every round, as the table's p10 and p90 need."""
    from autograph.export.timing import samples_side_by_side
    return samples_side_by_side(calls, device, args.runs, warmup=args.warmup)


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
                ms = time_side_by_side({method: lambda: run(x1)}, ctx["device"], args)[method]
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
# The TorchScript path below float32 after them: the export path's rows come first where the cap is short.
LAST_PHASE = ["autograph_export", "autograph_export_tf32", "autograph_export_bf16", "autograph_export_fp16",
              "autograph_graph_bf16"]


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
    ctx["rows_dir"] = rows_dir
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
    # Last, so that a profile never costs a row: where the replays spend their time.
    profile_replays(ctx, runs, rows, rows_dir, lambda line: print(f"{PROG}: {ctx['name']} {line}", flush=True),
                    lambda: left_s(args.deadline), LEAST_PROFILE_S)
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
        samples = time_side_by_side(calls, ctx["device"], args)
    log_warnings(f"{PROG}: {ctx['name']} (side by side)", caught)  # not attributable to one method
    for method, row in rows.items():
        row.update(timing_entries(samples[method]), timed=f"side by side ({len(calls)} methods)")
        if args.anchor in samples and args.anchor not in rows:
            row["anchor_ms"] = tcb.percentile(samples[args.anchor], 0.5)
            anchor = f"{args.anchor} in the same process: {row['anchor_ms']:.4g} ms"
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
    Inductor's check of the CPU's vector ISA (slow in a fresh cache, paid again by the first export-path
    optimize otherwise) and a tiny torch.compile (Inductor's and Triton's start-up)."""
    import torch
    from torch._inductor import cpu_vec_isa
    start = time.perf_counter()
    isa = cpu_vec_isa.valid_vec_isa_list()
    print(f"{PROG}: CPU vector ISA check: {[str(i) for i in isa]} in {time.perf_counter() - start:.1f} s", flush=True)
    start = time.perf_counter()
    tcb.warm_up_compiler(torch.device(args.device))
    print(f"{PROG}: torch.compile start-up on {args.device}: {time.perf_counter() - start:.1f} s", flush=True)
    return 0
