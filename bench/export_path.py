#!/usr/bin/env python3
"""The export path against the TorchScript path, model by model, side by side in one run.

    python bench/export_path.py [--models a,b] [--unseen c,d] [--repeats N] [--out DIR] [--method autograph]

For each zoo model (models/registry.py): the eval-mode module, exported with torch.export (strict=False)
and traced for TorchScript; both optimized by autograph with the same method (the export path also with
option inductor off); torch.compile (Inductor, default settings and with freezing; --no-compile skips
them and AOTInductor alone, --no-aoti the latter only) as the rivals a user would pick; outputs of all compared
with eager (relative to the output's scale); the optimized models, torch.compile and eager timed in alternation
(warm-up, then `repeats` rounds, each method once per round) on this machine's CPU. Writes
DIR/results.csv and DIR/README.md (a table with medians, p10/p90, the ratio export / TorchScript and
both optimize times). --unseen adds models the zoo lacks (bench/unseen_models.py: architectures written
from their papers by name, else torchvision's; random weights, batch 1), as a user would bring them;
--trained adds models with trained weights and realistic inputs (bench/trained_models.py).
Long: a benchmark, never a timed test.
"""
import argparse
import atexit
import csv
import os
import random
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

_SCRATCH = []


def scratch_dir(prefix: str) -> str:
    """A temporary folder, removed when the run ends: the compile caches and packages of one model's
    methods reach 1 GB (bert_base), and runs that kept theirs filled the disk."""
    path = tempfile.mkdtemp(prefix=prefix)
    _SCRATCH.append(path)
    return path


atexit.register(lambda: [shutil.rmtree(p, ignore_errors=True) for p in _SCRATCH])

# Cold caches for every compiler in the run (Inductor's, and autograph's packages), unless --warm-cache:
# compile times then mean what a first optimize costs.
if "--warm-cache" not in sys.argv:
    os.environ["TORCHINDUCTOR_CACHE_DIR"] = scratch_dir("inductor-cache-")
    os.environ["AUTOGRAPH_CACHE_DIR"] = scratch_dir("autograph-inductor-")
import torch  # noqa: E402
import torch._inductor.config  # noqa: E402
import torch._inductor.utils  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "python"))
sys.path.insert(0, str(ROOT / "bench"))
import autograph  # noqa: E402
import rivals  # noqa: E402  (bench/rivals.py)
import trained_models  # noqa: E402  (bench/trained_models.py)
import unseen_models  # noqa: E402  (bench/unseen_models.py)
from models import registry  # noqa: E402

DEFAULT_MODELS = ["squeezenet", "resnet50", "inception_v3", "resnext50_32x4d", "nasnet_a_mobile", "rnntc_sru",
                  "bert_base", "randwire", "nasnet_a_large"]


def fresh_compile_caches() -> None:
    """Before each compiling method of each model (unless --warm-cache): new on-disk caches and Inductor's
    in-memory ones cleared, so no method reuses kernels another compiled (the same fused kernel has the
    same source whoever asks for it). Inductor's one-time check of the CPU's vector ISA is done once
    before the run (warm_isa_check): it is paid once per machine, not per model."""
    if "--warm-cache" in sys.argv:
        return
    os.environ["TORCHINDUCTOR_CACHE_DIR"] = scratch_dir("inductor-cache-")
    os.environ["AUTOGRAPH_CACHE_DIR"] = scratch_dir("autograph-inductor-")
    torch._inductor.utils.clear_inductor_caches()


def warm_isa_check() -> None:
    from torch._inductor import cpu_vec_isa
    cpu_vec_isa.valid_vec_isa_list()


def warm_compilers() -> None:
    """Each compiler's one-time costs of a process (imports, Inductor's compile workers, the ONNX
    exporter, OpenVINO's converter process) paid on a tiny model before any model is timed, so that
    whichever compiler runs first does not carry them (on rnntc_sru the first compile took far longer
    than the same compile run second). The compile times then compare the compilers themselves."""
    model = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.ReLU()).eval()
    x = torch.randn(2, 8)
    fresh_compile_caches()
    with torch.no_grad():
        autograph.optimize(torch.export.export(model, (x,), strict=False))[0].module()(x)
        with torch._inductor.config.patch(freezing=True):
            torch.compile(model)(x)
        torch._inductor.aoti_compile_and_package(torch.export.export(model, (x,), strict=False),
                                                 package_path=scratch_dir("aoti-") + "/m.pt2")
    with tempfile.TemporaryDirectory() as workdir:
        rivals.rivals(model, (x,), Path(workdir))
    torch._dynamo.reset()


def rel_err(got, want) -> float:
    """max |got - want| / max |want| over all output tensors (flattened in order: the rivals return lists),
    as the export path's accuracy gate measures it (autograph.export.check.relative_error: no floor on the
    scale, the difference itself where every wanted value is 0)."""
    from autograph.export.check import relative_error
    got = torch.cat([g.flatten() for g in torch.utils._pytree.tree_leaves(got)])
    want = torch.cat([w.flatten() for w in torch.utils._pytree.tree_leaves(want)])
    if got.numel() != want.numel():
        raise RuntimeError(f"outputs differ in size: {got.numel()} values, expected {want.numel()}")
    return relative_error(got, want)


def time_side_by_side(runs, warmup: int, repeats: int, device: torch.device):
    """autograph's own timing policy (autograph.export.timing), every method timed to the end."""
    from autograph.export.timing import samples_side_by_side
    return samples_side_by_side(runs, device, repeats, warmup=warmup)


def pct(xs, q):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))]


def export_run(model, inputs, want, args, row, key="export", **options):
    """The export path: exported, optimized with `options` (row gets `key`'s optimize time, error, kept
    candidate); the optimized program's callable, or None when the path failed (row[key + "_error"]
    says why). With inductor=False, openvino=False, onnxruntime=False (key "export_aten": ATen's kernels, as the TorchScript path runs
    them) its optimize time is the like-for-like one against the TorchScript path's."""
    try:
        fresh_compile_caches()
        start = time.perf_counter()
        ep = torch.export.export(model, inputs, strict=False)
        exported, report = autograph.optimize(ep, method=args.method, **options)
        row[f"{key}_optimize_s"] = time.perf_counter() - start
        run_export = exported.module()
        with torch.no_grad():
            row[f"{key}_rel_err"] = rel_err(run_export(*inputs), want)
    except Exception as e:  # noqa: BLE001 - a row says what failed
        row[f"{key}_error"] = str(e).splitlines()[0][:200]
        return None
    row[f"{key}_stages"], row[f"{key}_streams"] = report["stages"], report["streams"]
    contest_entry(report, row, key)
    return lambda: run_export(*inputs)


def contest_entry(report, row, key) -> None:
    """The contest's outcome into the row: the kept candidate, the chosen program's label, each
    candidate's time, and whether parts of different compilers were mixed ("mix": present only where two
    compilers' whole graphs competed). "inductor" is the entry's name before other compilers joined."""
    contest = report.get("contest") or report.get("inductor") or {}
    row[f"{key}_kept"] = contest.get("kept", "aten")
    if report.get("chosen"):
        row[f"{key}_chosen"] = report["chosen"]
    row[f"{key}_inductor_s"] = contest.get("compile_s", 0.0)
    for candidate, c in contest.get("candidates", {}).items():
        row[f"{key}_{candidate}_ms"] = c.get("median_ms", float("nan"))
    mix = contest.get("mix")
    if mix:
        row[f"{key}_mix"] = mix.get("decision", "")
        row[f"{key}_mix_parts"] = len(mix.get("parts", []))
        if "mix_s" in mix:
            row[f"{key}_mix_s"] = mix["mix_s"]
    if contest.get("errors"):
        row[f"{key}_inductor_errors"] = str(contest["errors"])[:300]


def aoti_run(model, inputs, want, row):
    """AOTInductor alone, as a user deploying to C++ without autograph would use it: torch.export, then
    aoti_compile_and_package with freezing, then the package loaded; export + compile + load is its
    compile time."""
    try:
        fresh_compile_caches()
        start = time.perf_counter()
        # Under no_grad, as Inductor applies freezing only then (with grad on, the weights stay inputs and
        # the package runs at torch.compile-without-freezing's speed).
        with torch.no_grad():
            ep = torch.export.export(model, inputs, strict=False)
            path = torch._inductor.aoti_compile_and_package(
                ep, package_path=scratch_dir("aoti-") + "/m.pt2", inductor_configs={"freezing": True})
        loaded = torch._inductor.aoti_load_package(path)
        row["aoti_s"] = time.perf_counter() - start
        with torch.no_grad():
            row["aoti_rel_err"] = rel_err(loaded(*inputs), want)
    except Exception as e:  # noqa: BLE001 - a row says what failed
        row["aoti_error"] = str(e).splitlines()[0][:200]
        return {}
    return {"aoti": lambda: loaded(*inputs)}


def compile_runs(model, inputs, want, device, row):
    """torch.compile, default and with freezing (CUDA: max-autotune, what a GPU user tries for speed);
    the first call compiles and is timed as compile time."""
    runs = {}
    variants = {"compile": torch.compile(model),
                "compile_freezing": torch.compile(model, options={"freezing": True}) if device.type == "cpu"
                else torch.compile(model, mode="max-autotune")}
    for name, compiled in variants.items():
        fresh_compile_caches()
        start = time.perf_counter()
        try:
            # options={"freezing": True} alone does not freeze in torch 2.11 (the weights stay graph inputs);
            # Inductor's global setting during the compiling call does.
            freezing = name == "compile_freezing" and device.type == "cpu"
            with torch.no_grad(), torch._inductor.config.patch(freezing=freezing):
                row[f"{name}_rel_err"] = rel_err(compiled(*inputs), want)
        except Exception as e:  # noqa: BLE001 - a row says what failed
            row[f"{name}_error"] = str(e).splitlines()[0][:200]
            continue
        row[f"{name}_s"] = time.perf_counter() - start
        runs[name] = (lambda c: lambda: c(*inputs))(compiled)
    return runs


def rival_runs(model, inputs, want, row):
    """ONNX Runtime and OpenVINO (bench/rivals.py); a rival that does not run here is a row entry."""
    with tempfile.TemporaryDirectory() as workdir:
        made, missing = rivals.rivals(model, inputs, Path(workdir))
    runs = {}
    for rival, (run, ready_s) in made.items():
        try:
            row[f"{rival}_rel_err"] = rel_err(run(), want)
        except Exception as e:  # noqa: BLE001 - a row says what failed (e.g. outputs of another size)
            row[f"{rival}_error"] = str(e).splitlines()[0][:200]
            continue
        row[f"{rival}_s"] = ready_s
        runs[rival] = run
    for rival, why in missing.items():
        row[f"{rival}_error"] = why
    return runs


# The rivals a user would pick instead, for "vs best rival": the fastest of them against the export path.
FASTEST_RIVALS = ("onnxruntime", "openvino", "compile", "compile_freezing")


def ratios(row) -> None:
    """Speedups of the export path: another method's median / the export path's, where both ran."""
    if "export_median_ms" not in row:
        return
    export_ms = row["export_median_ms"]
    for other, key in (("torchscript", "export_over_torchscript"), ("compile", "export_over_compile"),
                       ("compile_freezing", "export_over_compile_freezing"), ("aoti", "export_over_aoti")):
        if f"{other}_median_ms" in row:
            row[key] = row[f"{other}_median_ms"] / export_ms
    rival_ms = [row[f"{r}_median_ms"] for r in ("onnxruntime", "openvino") if f"{r}_median_ms" in row]
    if rival_ms:
        row["export_over_best_rival"] = min(rival_ms) / export_ms
    any_ms = [row[f"{r}_median_ms"] for r in FASTEST_RIVALS if f"{r}_median_ms" in row]
    if any_ms:
        row["export_over_fastest_rival"] = min(any_ms) / export_ms


# Resamples of the rounds for the spread of "vs best rival" (bootstrap): the best of several rivals' medians
# is itself a noisy minimum, and one run's ratio near 1 may go either way.
BOOTSTRAP = 2000


def ratio_spread(row, samples) -> None:
    """The 10th and 90th percentiles of "vs best rival" over the rounds resampled with replacement (each
    resample takes whole rounds: the methods of one round ran side by side)."""
    rivals_run = [r for r in FASTEST_RIVALS if r in samples]
    if "export" not in samples or not rivals_run:
        return
    rounds = min(len(samples[m]) for m in ["export"] + rivals_run)
    if rounds < 3:
        return
    rng = random.Random(0)
    ratios_seen = []
    for _ in range(BOOTSTRAP):
        picked = [rng.randrange(rounds) for _ in range(rounds)]
        export_ms = statistics.median(samples["export"][i] for i in picked)
        ratios_seen.append(min(statistics.median(samples[m][i] for i in picked) for m in rivals_run) / export_ms)
    row["export_over_fastest_rival_p10"] = pct(ratios_seen, 0.1)
    row["export_over_fastest_rival_p90"] = pct(ratios_seen, 0.9)


def torchscript_run(model, inputs, want, args, row):
    """The TorchScript path: traced, then optimized; {} when it failed (row["torchscript_error"] says
    why: a model brought by the user may not trace or optimize there)."""
    try:
        start = time.perf_counter()
        with torch.no_grad():
            traced = torch.jit.trace(model, inputs, check_trace=False)
        scripted, _ = autograph.optimize(traced, list(inputs), method=args.method)
        row["torchscript_optimize_s"] = time.perf_counter() - start
        with torch.no_grad():
            row["torchscript_rel_err"] = rel_err(scripted(*inputs), want)
    except Exception as e:  # noqa: BLE001 - a row says what failed
        row["torchscript_error"] = str(e).splitlines()[0][:200]
        return {}
    return {"torchscript": lambda: scripted(*inputs)}


def model_and_inputs(name: str, args, device):
    """The eval-mode model and its inputs on `device`: a zoo model, or one of --unseen or --trained."""
    torch.manual_seed(0)
    if name in args.unseen:
        model, inputs = unseen_models.build(name)
    elif name in args.trained:
        model, inputs, _ = trained_models.build(name, 1)
    else:
        model, inputs = registry.build(name), registry.make_inputs(name)
    return model.to(device), tuple(t.to(device) for t in inputs)


def measure(name: str, args, device, sync):
    model, inputs = model_and_inputs(name, args, device)
    with torch.no_grad():
        want = model(*inputs)
    row = {"model": name, "method": args.method}
    run_export = export_run(model, inputs, want, args, row)
    runs = {"eager": lambda: model(*inputs), **torchscript_run(model, inputs, want, args, row)}
    run_export_aten = export_run(model, inputs, want, args, row, key="export_aten", inductor=False, openvino=False, onnxruntime=False)
    if run_export_aten is not None:
        runs["export_aten"] = run_export_aten
    if args.cost_of:
        run_without = export_run(model, inputs, want, args, row, key="export_without", **{args.cost_of: False})
        if run_without is not None:
            runs["export_without"] = run_without
    if not args.no_compile:
        runs.update(compile_runs(model, inputs, want, device, row))
        if not args.no_aoti:
            runs.update(aoti_run(model, inputs, want, row))
    if not args.no_rivals and device.type == "cpu":  # (ONNX Runtime's CUDA provider: not installed here)
        runs.update(rival_runs(model, inputs, want, row))
    if run_export is not None:
        runs["export"] = run_export
    with torch.no_grad():
        samples = time_side_by_side(runs, args.warmup, args.repeats, device)
    for method, xs in samples.items():
        row[f"{method}_median_ms"] = statistics.median(xs)
        row[f"{method}_p10_ms"], row[f"{method}_p90_ms"] = pct(xs, 0.1), pct(xs, 0.9)
    ratios(row)
    ratio_spread(row, samples)
    return row


def earlier_rows(path: Path, skip):
    if not path.exists():
        return []
    with open(path, newline="") as f:
        rows = [r for r in csv.DictReader(f) if r["model"] not in skip]
    for r in rows:
        for k, v in list(r.items()):
            if v == "":
                del r[k]
            else:
                try:
                    text = k in ("model", "method") or k.endswith(("_kept", "_error", "_errors", "_chosen", "_mix"))
                    r[k] = v if text else float(v)
                except ValueError:
                    pass
    return rows


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--models", default=",".join(DEFAULT_MODELS))
    p.add_argument("--unseen", default="", help="models the zoo lacks (bench/unseen_models.py: "
                   f"{', '.join(unseen_models.ARCHITECTURES)}, or a torchvision model's name)")
    p.add_argument("--trained", default="", help="models with trained weights (bench/trained_models.py: "
                   f"{', '.join(trained_models.MODELS)})")
    p.add_argument("--method", default="autograph")
    p.add_argument("--repeats", type=int, default=20)
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--no-compile", action="store_true", help="leave torch.compile out")
    p.add_argument("--no-aoti", action="store_true", help="leave AOTInductor alone out (it unrolls recurrent "
                   "layers step by step: minutes of compile on a GRU over a few hundred frames)")
    p.add_argument("--warm-cache", action="store_true", help="reuse Inductor's and autograph's compile caches")
    p.add_argument("--no-rivals", action="store_true", help="leave ONNX Runtime and OpenVINO out")
    p.add_argument("--cost-of", default="", help="a compiler's option (onnxruntime, openvino): the export path "
                   "also runs with it off, timed beside the others (what that compiler buys in speed)")
    p.add_argument("--device", default="cpu", help="cpu or cuda (on cuda: torch.compile max-autotune instead of "
                   "freezing, no ONNX Runtime / OpenVINO columns)")
    p.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "export-path")
    p.add_argument("--append", action="store_true", help="keep DIR/results.csv's rows of the models not run now")
    args = p.parse_args()
    args.unseen = [n for n in args.unseen.split(",") if n]
    args.trained = [n for n in args.trained.split(",") if n]
    names = [n for n in args.models.split(",") if n] + args.unseen + args.trained
    args.out.mkdir(parents=True, exist_ok=True)
    device = torch.device(args.device)
    sync = torch.cuda.synchronize if device.type == "cuda" else (lambda: None)
    warm_isa_check()
    warm_compilers()
    rows = earlier_rows(args.out / "results.csv", skip=names) if args.append else []
    for name in names:
        rows.append(measure(name, args, device, sync))
        print({k: (round(v, 4) if isinstance(v, float) else v) for k, v in rows[-1].items()}, flush=True)
        write(args, rows)
    return 0


def write(args, rows) -> None:
    keys = sorted({k for r in rows for k in r}, key=lambda k: (k != "model", k))
    with open(args.out / "results.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=keys)
        w.writeheader()
        w.writerows(rows)
    lines = speed_table(args, rows) + [""] + optimize_table(rows)
    (args.out / "README.md").write_text("\n".join(lines) + "\n")


def mix_cell(r) -> str:
    """The contest's mix decision, short: which compilers' parts were mixed, or why not; "—" where no
    mix was tried (fewer than two compilers' whole graphs competed)."""
    decision = r.get("export_mix")
    if not decision:
        return "—"
    if decision.startswith("mixed: "):
        owners = list(dict.fromkeys(o.strip() for o in decision[len("mixed: "):].split(",")))
        return "mixed: " + ", ".join(owners)
    short = decision if len(decision) <= 90 else decision[:89] + "…"  # the whole of it is in results.csv
    return short.replace("|", "/")


def speed_table(args, rows):
    """The timing table: each method's median ms, the kept candidate, and the export path's speedups."""
    command = (f"python bench/export_path.py --models {args.models}"
               + (f" --unseen {','.join(args.unseen)}" if args.unseen else "")
               + (f" --trained {','.join(args.trained)}" if args.trained else "") + f" --repeats {args.repeats}"
               + (" --no-compile" if args.no_compile else "") + (" --no-aoti" if args.no_aoti else "")
               + (" --no-rivals" if args.no_rivals else "")
               + (f" --cost-of {args.cost_of}" if args.cost_of else ""))
    lines = [f"# Export path vs TorchScript path and the rivals ({args.method}), {args.device}", "",
             f"`{command}` on "
             f"{torch.get_num_threads()} threads, torch {torch.__version__}. Median ms (p10–p90) of "
             f"{args.repeats} rounds, methods alternated (each timed call after at least 10 ms of untimed calls of the same method), "
             "cold compile caches; speedups = the other's time / the "
             "export path's (below 1: the export path is slower). torch.compile: Inductor, default settings and "
             "with weight freezing (on CUDA: mode=max-autotune in that column). ONNX Runtime: CPU provider, sequential executor, all graph optimizations; "
             "OpenVINO: CPU, latency hint; both from one torch.onnx.export (dynamo). Kept: which export-path "
             "candidate the contest kept (aten: ATen's kernels; whole: the graph as one Inductor part; plan: the plan's "
             "parts; whole_unfrozen: one Inductor part without freezing; whole_openvino / whole_onnxruntime: the "
             "graph as one OpenVINO / ONNX Runtime part; mix: each part by the compiler fastest on it). Mix: the "
             "contest's decision on mixing compilers' parts (mixed: the candidate mix was built from those "
             "compilers' parts and competed like the others, kept says whether it won; — where fewer than two "
             "compilers' whole graphs competed). vs best rival: the fastest of ONNX Runtime, OpenVINO and torch.compile (either column) "
             "/ the export path, with its 10th–90th percentiles over the rounds resampled (bootstrap): a spread "
             "that holds 1.0 is a tie within this run's noise.", "",
             "| model | eager | TorchScript path | torch.compile | torch.compile (freezing) | ONNX Runtime | OpenVINO "
             "| export path | kept | mix | export vs TS | vs compile / freezing | vs best of ORT, OpenVINO "
             "| vs best rival | optimize s (TS / export / compile / freezing) "
             "| rel. err (TS / export / compile / ORT / OpenVINO) |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---|---|---:|---:|---:|---:|---:|---:|"]
    lines += [speed_row(r) for r in rows]
    nan = float("nan")
    keys = ("export_over_torchscript", "export_over_compile_freezing", "export_over_best_rival",
            "export_over_fastest_rival")
    speedups = {k: [r[k] for r in rows if k in r] for k in keys}
    if any(speedups.values()):
        geo = {k: (statistics.geometric_mean(v) if v else nan) for k, v in speedups.items()}
        lines += ["", f"Geometric means of the speedups: export vs TorchScript path {geo['export_over_torchscript']:.2f}×, "
                      f"vs torch.compile (freezing) {geo['export_over_compile_freezing']:.2f}×, vs the best of ONNX Runtime "
                      f"and OpenVINO {geo['export_over_best_rival']:.2f}×, vs the best rival (ONNX Runtime, OpenVINO, "
                      f"torch.compile) {geo['export_over_fastest_rival']:.2f}×."]
    return lines


def spread(r) -> str:
    """" (p10–p90)" of "vs best rival" over resampled rounds (ratio_spread), where measured."""
    if "export_over_fastest_rival_p10" not in r:
        return ""
    return f" ({r['export_over_fastest_rival_p10']:.2f}–{r['export_over_fastest_rival_p90']:.2f})"


def speed_row(r) -> str:
    nan = float("nan")

    def cell(m):
        if m + "_median_ms" in r:
            return f"{r[m + '_median_ms']:.1f} ({r[m + '_p10_ms']:.1f}–{r[m + '_p90_ms']:.1f})"
        return r.get(m + "_error", "—")[:60].replace("|", "/")
    return (f"| {r['model']} | {cell('eager')} | {cell('torchscript')} | {cell('compile')} | "
            f"{cell('compile_freezing')} | {cell('onnxruntime')} | {cell('openvino')} | {cell('export')} | "
            f"{r.get('export_kept', '—')} | {mix_cell(r)} | "
            f"{r.get('export_over_torchscript', nan):.2f}× | {r.get('export_over_compile', nan):.2f}× / "
            f"{r.get('export_over_compile_freezing', nan):.2f}× | {r.get('export_over_best_rival', nan):.2f}× | "
            f"{r.get('export_over_fastest_rival', nan):.2f}×{spread(r)} | "
            f"{r.get('torchscript_optimize_s', nan):.1f} / {r.get('export_optimize_s', nan):.1f} / "
            f"{r.get('compile_s', nan):.1f} / {r.get('compile_freezing_s', nan):.1f} | "
            f"{r.get('torchscript_rel_err', nan):.1e} / {r.get('export_rel_err', nan):.1e} / "
            f"{r.get('compile_rel_err', nan):.1e} / {r.get('onnxruntime_rel_err', nan):.1e} / "
            f"{r.get('openvino_rel_err', nan):.1e} |")


def optimize_table(rows):
    """The optimize (compile) time table."""
    lines = ["Optimize (compile) time in seconds, from the nn.Module: the TorchScript path (trace + optimize); the "
             "export path with option inductor off (ATen's kernels: the like-for-like one against the TorchScript "
             "path) and as it runs by default (Inductor parts); torch.compile default and with freezing (the first "
             "call); AOTInductor alone (torch.export + aoti_compile_and_package with freezing + load: what "
             "deploying to C++ without autograph costs). Every compiler's one-time costs of the process were "
             "paid on a tiny model before the first model (warm_compilers). Median ms of the ATen-kernel export "
             "path and of AOTInductor alone, from the same alternated run.", "",
             "| model | TS path | export (ATen) | export | compile | compile (freezing) | AOTInductor | "
             "export (ATen) ÷ TS | export ÷ compile (freezing) | export ÷ AOTInductor | ms: export (ATen) / "
             "AOTInductor / export |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        def seconds(k):
            return f"{r[k]:.1f}" if k in r else "—"

        def ratio(a, b):
            return f"{r[a] / r[b]:.2f}×" if a in r and b in r else "—"

        def ms(m):
            return f"{r[m + '_median_ms']:.1f}" if m + "_median_ms" in r else "—"
        lines.append(f"| {r['model']} | {seconds('torchscript_optimize_s')} | {seconds('export_aten_optimize_s')} | "
                     f"{seconds('export_optimize_s')} | {seconds('compile_s')} | {seconds('compile_freezing_s')} | "
                     f"{seconds('aoti_s')} | {ratio('export_aten_optimize_s', 'torchscript_optimize_s')} | "
                     f"{ratio('export_optimize_s', 'compile_freezing_s')} | {ratio('export_optimize_s', 'aoti_s')} | "
                     f"{ms('export_aten')} / {ms('aoti')} / {ms('export')} |")
    return lines + cost_table(rows)


def cost_table(rows):
    """With --cost-of: the export path with that compiler and without it, side by side: what it buys in
    speed, and the share of the optimize spent deciding on a mix of compilers' parts. (Optimize times
    of the two are not compared here: the one run second in this process finds compilers warm; see
    bench/fresh_process_compile.py --without.)"""
    rows = [r for r in rows if "export_without_median_ms" in r and "export_median_ms" in r]
    if not rows:
        return []
    lines = ["", "The export path with and without the compiler of option --cost-of (ms from the same alternated "
             "run): what the compiler buys in speed. mix s: the part of the optimize with it spent deciding on a "
             "mix of compilers' parts. Optimize times with and without it are compared in fresh processes by "
             "bench/fresh_process_compile.py --without.",
             "", "| model | ms with / without | without ÷ with | mix s | kept with / without |",
             "|---|---:|---:|---:|---|"]
    for r in rows:
        lines.append(f"| {r['model']} | {r['export_median_ms']:.1f} / {r['export_without_median_ms']:.1f} | "
                     f"{r['export_without_median_ms'] / r['export_median_ms']:.2f}× | "
                     f"{r.get('export_mix_s', 0.0):.1f} | {r.get('export_kept', '—')} / "
                     f"{r.get('export_without_kept', '—')} |")
    return lines

if __name__ == "__main__":
    sys.exit(main())
