"""Real-model corpus: every torchvision classification model (and its segmentation and detection
models) exported to TorchScript, optimized by the `autograph` CLI with each method on the CPU, and
the optimized module's outputs compared with the original's on a fresh input. Method `export` takes
the torch.export path instead: the model exported with torch.export, optimized by autograph.optimize,
saved as .pt2 and loaded and run in a fresh process.

    python bench/torchvision_corpus.py                      # the whole corpus -> bench/results/corpus-DATE-cpu/
    python bench/torchvision_corpus.py --models resnet18,vit_b_16 --methods autograph
    python bench/torchvision_corpus.py --quick              # the CI subset at small input sizes

Each model runs in a worker process of its own, so a crash (of the export, the CLI or the optimized
module) is recorded against that model and the corpus goes on. A row's status is one of
  optimized    optimize succeeded and every output tensor matches (relative error below --tolerance)
  fallback     optimize returned the module (partly or wholly) to TorchScript and said why; outputs match
  mismatch     the optimized module's outputs differ from the original's (a bug)
  failed       optimize exited non-zero, or the optimized module raised (a bug: refusal is not allowed)
  crashed      a process died on a signal or ran past --timeout (a bug)
  not-exported neither torch.jit.trace nor torch.jit.script accepts the model (torchvision's side)
Models that call ops of a Python extension (torchvision::nms) are optimized in the worker through
autograph.optimize (column api = python): the CLI cannot load such a library.
Weights are random (seeded), inputs drawn from N(0, 1); input sizes are the crop or resize size of
each model's default weights (as the model card says), or the model's fixed image size.
"""
import argparse
import csv
import datetime
import json
import os
import platform
import shlex
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "python"))

# Relative error = max |optimized - original| / max |original| over each output tensor. The optimized
# module runs the same operators in float32, but BatchNorm folded into convolutions, prepacked oneDNN
# weights and stitched kernels sum in another order; over a hundred layers that moves the outputs by
# about 1e-6 to 1e-5 of their scale. A scheduling bug (a missing, repeated or misplaced operator)
# moves them by order 1. 1e-3 keeps two decades of margin on both sides.
TOLERANCE = 1e-3

# The CI subset: small and quick models, each family's control flow and structures represented
# (inverted residuals, channel shuffle, fire modules, squeeze-excitation, a dict-returning
# segmentation model), at small input sizes.
QUICK = {"squeezenet1_1": 96, "shufflenet_v2_x0_5": 96, "mobilenet_v3_small": 96, "lraspp_mobilenet_v3_large": 96}

METHODS = ("autograph", "nimble", "export")  # export: the torch.export path (python/autograph/export.py)
STATUSES = ("optimized", "fallback", "mismatch", "failed", "crashed", "not-exported")


# --- model side (worker process) ---------------------------------------------------------------------

def corpus_models(families: Tuple[str, ...] = ("classification", "segmentation", "detection")) -> List[Tuple[str, str]]:
    import torchvision
    from torchvision import models
    modules = {"classification": models, "segmentation": models.segmentation, "detection": models.detection}
    return [(name, family) for family in families for name in sorted(torchvision.models.list_models(module=modules[family]))]


def default_size(name: str, model) -> int:
    """The input size the model's default weights were made for (crop size, else resize size)."""
    fixed = getattr(model, "image_size", None)  # vision transformers: positional embeddings fix it
    if isinstance(fixed, int):
        return fixed
    from torchvision import models
    transforms = models.get_model_weights(name).DEFAULT.transforms()
    for attr in ("crop_size", "resize_size"):
        size = getattr(transforms, attr, None)
        if size:
            return int(size[0])
    return 224


def build(name: str, family: str, size: Optional[int]):
    """(model in eval mode, example inputs, check inputs, size) with seeded weights and inputs."""
    import torch
    from torchvision import models
    torch.manual_seed(0)
    kwargs = {"weights": None}
    if family != "classification":
        kwargs["weights_backbone"] = None  # random backbone too: nothing is downloaded
    model = models.get_model(name, **kwargs).eval()
    size = size or default_size(name, model)

    def images(seed: int):
        gen = torch.Generator().manual_seed(seed)
        x = torch.randn(1, 3, size, size, generator=gen)
        return ([x[0]],) if family == "detection" else (x,)

    return model, images(100), images(101), size


def export(model, inputs) -> Tuple[Any, str]:
    """TorchScript of `model`: traced when tracing works, else scripted. Raises when neither does."""
    import torch
    errors = []
    try:
        with torch.no_grad():
            traced = torch.jit.trace(model, inputs, strict=False, check_trace=False)
            traced(*inputs)
        return traced, "trace"
    except Exception as e:  # noqa: BLE001 - any tracer failure sends us to scripting
        errors.append(f"trace: {first_line(e)}")
    try:
        scripted = torch.jit.script(model)
        with torch.no_grad():
            scripted(*inputs)
        return scripted, "script"
    except Exception as e:  # noqa: BLE001
        errors.append(f"script: {first_line(e)}")
    raise RuntimeError("; ".join(errors))


def first_line(e: BaseException) -> str:
    text = str(e).strip().splitlines()
    return (text[0] if text else type(e).__name__)[:300]


def arg_spec(value) -> Any:
    """NAME.json's description of one forward() argument."""
    import torch
    if isinstance(value, torch.Tensor):
        return {"shape": list(value.shape), "dtype": str(value.dtype).replace("torch.", "")}
    if isinstance(value, tuple):
        return {"tuple": [arg_spec(v) for v in value]}
    if isinstance(value, list):
        return {"list": [arg_spec(v) for v in value]}
    if isinstance(value, dict):
        return {"dict": {k: arg_spec(v) for k, v in value.items()}}
    return value


def tensors_of(value, path="out") -> List[Tuple[str, Any]]:
    """Every tensor inside a (nested) output, with where it is; non-tensor leaves as themselves."""
    import torch
    if isinstance(value, torch.Tensor):
        return [(path, value)]
    if isinstance(value, (tuple, list)):
        return [t for i, v in enumerate(value) for t in tensors_of(v, f"{path}[{i}]")]
    if isinstance(value, dict):
        return [t for k, v in value.items() for t in tensors_of(v, f"{path}[{k!r}]")]
    return [(path, value)]


def compare(got, want) -> Tuple[float, str]:
    """(largest relative error over the output tensors, what differs in structure or '')."""
    import torch
    g, w = tensors_of(got), tensors_of(want)
    if [p for p, _ in g] != [p for p, _ in w]:
        return float("inf"), f"structure differs: {[p for p, _ in g][:4]} vs {[p for p, _ in w][:4]}"
    worst = 0.0
    for (path, a), (_, b) in zip(g, w):
        if isinstance(b, torch.Tensor):
            if not isinstance(a, torch.Tensor) or a.shape != b.shape or a.dtype != b.dtype:
                return float("inf"), f"{path}: {describe(a)} instead of {describe(b)}"
            if b.numel() == 0:
                continue
            if not b.is_floating_point():
                if not torch.equal(a, b):
                    return float("inf"), f"{path}: integer values differ"
                continue
            scale = b.abs().max().item()
            err = (a - b).abs().max().item()
            worst = max(worst, err / scale if scale > 0 else err)
        elif a != b:
            return float("inf"), f"{path}: {a!r} instead of {b!r}"
    return worst, ""


def describe(t) -> str:
    import torch
    return f"{tuple(t.shape)} {t.dtype}" if isinstance(t, torch.Tensor) else type(t).__name__


def worker(name: str, family: str, size: Optional[int], methods: List[str], cli: str, tolerance: float,
           timeout: float, work: Path, extra: List[str]) -> Dict[str, Any]:
    """Exports one model, optimizes it with each method through the CLI and checks the outputs."""
    import torch
    torch.set_num_threads(int(os.environ.get("AUTOGRAPH_CORPUS_THREADS", "2")))
    import autograph
    autograph.load_library()
    result: Dict[str, Any] = {"model": name, "family": family, "rows": []}
    t0 = time.perf_counter()
    model, inputs, check, size = build(name, family, size)
    result["size"] = size
    try:
        scripted, how = export(model, inputs)
    except RuntimeError as e:
        result["export"] = "none"
        result["rows"] = [{"method": m, "status": "not-exported", "reason": str(e)} for m in methods]
        return result
    result["export"] = how
    path = work / f"{name}.pt"
    scripted.save(str(path))
    (work / f"{name}.json").write_text(json.dumps({"inputs": [arg_spec(v) for v in inputs]}))
    with torch.no_grad():
        original = torch.jit.load(str(path))
        want = original(*check)
    # Ops of a Python extension (torchvision::nms in the detection models) load only into a Python
    # process (torchvision's library needs libpython): such models go through autograph.optimize here,
    # as their users would; every other model through the CLI.
    api = "python" if "torchvision::" in str(original.inlined_graph) else "cli"
    result["export_s"] = round(time.perf_counter() - t0, 1)
    del scripted
    for method in methods:
        if method == "export":
            result["rows"].append(export_path_and_check(model, inputs, check, want, tolerance, timeout, work, extra))
        else:
            result["rows"].append(optimize_and_check(cli, path, method, api, inputs, check, want, tolerance, timeout,
                                                     work, extra))
    return result


RELOAD = """
import sys, torch, autograph
ep = torch.export.load(sys.argv[1])
check = torch.load(sys.argv[2])
with torch.no_grad():
    torch.save(ep.module()(*check), sys.argv[3])
"""


def export_path_and_check(model, inputs, check, want, tolerance: float, timeout: float, work: Path,
                          extra: List[str]) -> Dict[str, Any]:
    """The export path (method "export"): torch.export, autograph.optimize (its autograph search; Inductor
    parts only with --export-inductor), torch.export.save, then loaded and run in a fresh process."""
    import torch
    import autograph
    row: Dict[str, Any] = {"method": "export", "api": "python"}
    options = python_options(extra)
    options.setdefault("inductor", os.environ.get("AUTOGRAPH_CORPUS_EXPORT_INDUCTOR") == "1")
    t0 = time.perf_counter()
    try:
        ep = torch.export.export(model, inputs, strict=False)
    except Exception as e:  # noqa: BLE001 - torch.export's refusal (data-dependent control flow, ...)
        return {**row, "status": "not-exported", "reason": f"torch.export: {first_line(e)}"}
    try:
        optimized, report = autograph.optimize(ep, method="autograph", **options)
    except autograph.UnsupportedModelError as e:  # refused with the reason (the TorchScript path takes it)
        return {**row, "status": "not-exported", "reason": f"export path: {first_line(e)}"}
    except autograph.Error as e:
        return {**row, "status": "failed", "reason": first_line(e)}
    row["optimize_s"] = round(time.perf_counter() - t0, 1)
    row.update(operators=report.get("operators_before"), optimized_ops=report.get("operators_optimized"), left_ops=0,
               stages=report.get("stages"), streams=report.get("streams"),
               chosen=(report.get("inductor") or {}).get("kept", "aten"))
    out, io, got_path = work / "export_opt.pt2", work / "check.pt", work / "export_out.pt"
    torch.export.save(optimized, str(out))
    torch.save(check, io)
    try:
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT / "python"), os.environ.get("PYTHONPATH")]))}
        r = subprocess.run([sys.executable, "-c", RELOAD, str(out), str(io), str(got_path)], capture_output=True,
                           text=True, timeout=timeout, env=env)
    except subprocess.TimeoutExpired:
        return {**row, "status": "crashed", "reason": f"reloading the .pt2 ran past {timeout:.0f} s"}
    if r.returncode != 0:
        return {**row, "status": "failed", "reason": f"the reloaded .pt2 failed: {last_line(r.stderr)}"}
    err, differs = compare(torch.load(got_path), want)
    row["rel_err"] = err
    if differs or err > tolerance:
        return {**row, "status": "mismatch", "reason": differs or f"relative error {err:.2e} > {tolerance:g}"}
    return {**row, "status": "optimized", "reason": ""}


def optimize_and_check(cli: str, path: Path, method: str, api: str, inputs, check, want, tolerance: float,
                       timeout: float, work: Path, extra: List[str]) -> Dict[str, Any]:
    import torch
    out = work / f"{path.stem}_{method}.pt"
    row: Dict[str, Any] = {"method": method, "api": api}
    t0 = time.perf_counter()
    if api == "python":
        import autograph
        try:
            optimized, report = autograph.optimize(str(path), list(inputs), method=method, **python_options(extra))
            torch.jit.save(optimized, str(out))
        except autograph.Error as e:
            return {**row, "status": "failed", "reason": first_line(e)}
    else:
        try:
            r = subprocess.run([cli, "optimize", str(path), "-o", str(out), "--method", method, "--json", *extra],
                               capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            return {**row, "status": "crashed", "reason": f"optimize ran past {timeout:.0f} s"}
        if r.returncode < 0:
            return {**row, "status": "crashed", "reason": f"optimize died on {signal.Signals(-r.returncode).name}"}
        if r.returncode != 0:
            return {**row, "status": "failed", "reason": last_line(r.stderr)}
        report = json.loads(r.stdout)
    row["optimize_s"] = round(time.perf_counter() - t0, 1)
    left = report.get("left_to_torchscript") or []
    row.update(operators=report.get("operators_before"), optimized_ops=report.get("operators_optimized"),
               left_ops=sum(p.get("count", 0) for p in left), stages=report.get("stages"),
               streams=report.get("streams"), chosen=report.get("chosen") or "")
    reasons = [f"{p['op']} x{p['count']}: {p['reason']}" for p in left]
    if report.get("fallback"):
        if "internal error" in report["fallback"]:  # the module came back unchanged because of our bug
            return {**row, "status": "failed", "reason": report["fallback"]}
        reasons.insert(0, report["fallback"])
    try:
        with torch.no_grad():
            got = torch.jit.load(str(out))(*check)
    except Exception as e:  # noqa: BLE001 - an optimized module that raises is a failure to record
        return {**row, "status": "failed", "reason": f"optimized module raised: {first_line(e)}"}
    err, differs = compare(got, want)
    row["rel_err"] = err
    if differs or err > tolerance:
        return {**row, "status": "mismatch", "reason": differs or f"relative error {err:.2e} > {tolerance:g}"}
    return {**row, "status": "fallback" if reasons else "optimized", "reason": "; ".join(reasons)}


def python_options(flags: List[str]) -> Dict[str, Any]:
    """autograph.optimize's options for CLI flags: --no-check-rewrites -> check_rewrites=False, --verify 0 -> verify=0."""
    options: Dict[str, Any] = {}
    i = 0
    while i < len(flags):
        name = flags[i].lstrip("-").replace("-", "_")
        if name.startswith("no_"):
            options[name[3:]] = False
            i += 1
        else:
            value = flags[i + 1]
            options[name] = int(value) if value.lstrip("-").isdigit() else float(value) if value.replace(".", "", 1).isdigit() else value
            i += 2
    return options


def last_line(text: str) -> str:
    lines = [l for l in text.strip().splitlines() if l.strip()]
    return lines[-1][:300] if lines else "(no message)"


# --- driver side -------------------------------------------------------------------------------------

def run_model(name: str, family: str, size: Optional[int], methods: List[str], cli: str, tolerance: float,
              timeout: float, extra: Tuple[str, ...] = ()) -> Dict[str, Any]:
    """One model in a worker process; a worker that dies or hangs becomes a `crashed` row."""
    with tempfile.TemporaryDirectory(prefix=f"corpus_{name}_") as work:
        cmd = [sys.executable, __file__, "--worker", name, "--family", family, "--methods", ",".join(methods),
               "--cli", cli, "--tolerance", str(tolerance), "--timeout", str(timeout), "--work", work,
               f"--optimize-args={' '.join(extra)}"]
        if size:
            cmd += ["--size", str(size)]
        budget = timeout * (len(methods) + 1) + 120
        try:
            r = subprocess.run(cmd, capture_output=True, text=True, timeout=budget)
        except subprocess.TimeoutExpired:
            return crashed(name, family, methods, f"worker ran past {budget:.0f} s")
        lines = [l for l in r.stdout.splitlines() if l.startswith("{")]
        if r.returncode != 0 or not lines:
            why = (f"worker died on {signal.Signals(-r.returncode).name}" if r.returncode < 0
                   else f"worker exited {r.returncode}: {last_line(r.stderr)}")
            return crashed(name, family, methods, why)
        return json.loads(lines[-1])


def crashed(name: str, family: str, methods: List[str], why: str) -> Dict[str, Any]:
    return {"model": name, "family": family, "rows": [{"method": m, "status": "crashed", "reason": why} for m in methods]}


COLUMNS = ["model", "family", "size", "export", "api", "method", "status", "operators", "optimized_ops", "left_ops",
           "stages", "streams", "chosen", "rel_err", "optimize_s", "reason"]


def flatten(results: List[Dict[str, Any]]) -> List[Dict[str, Any]]:
    return [{**{k: res.get(k, "") for k in ("model", "family", "size", "export")}, **row}
            for res in results for row in res["rows"]]


def write_table(rows: List[Dict[str, Any]], out: Path, command: str, seconds: float, done: int, total: int) -> None:
    out.mkdir(parents=True, exist_ok=True)
    with open(out / "corpus.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=COLUMNS, extrasaction="ignore")
        w.writeheader()
        w.writerows(rows)
    import torch
    import torchvision
    counts = {s: sum(r["status"] == s for r in rows) for s in STATUSES}
    md = [f"# torchvision corpus on CPU, {datetime.date.today()}", "",
          f"Command (the last, with --resume: earlier rows kept): `{command}`; {seconds / 60:.0f} min on {os.cpu_count()} cores ({platform.processor() or platform.machine()}), "
          f"torch {torch.__version__}, torchvision {torchvision.__version__}, commit {git_commit()}.", "",
          f"Models: {done} of {total}" + ("" if done == total else " (the run was stopped here)") + ". Totals: " +
          ", ".join(f"{n} {s}" for s, n in counts.items()) + f" (of {len(rows)} rows).", "",
          "| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    for r in rows:
        cells = []
        for c in COLUMNS:
            v = r.get(c, "")
            cells.append(f"{v:.1e}" if c == "rel_err" and isinstance(v, float) else str(v).replace("|", "/"))
        md.append("| " + " | ".join(cells) + " |")
    (out / "corpus.md").write_text("\n".join(md) + "\n")


def earlier_results(path: Path) -> List[Dict[str, Any]]:
    """The per-model results of an earlier run's table (for --resume)."""
    if not path.exists():
        return []
    results: Dict[str, Dict[str, Any]] = {}
    with open(path, newline="") as f:
        for row in csv.DictReader(f):
            res = results.setdefault(row["model"], {k: row[k] for k in ("model", "family", "size", "export")} | {"rows": []})
            entry = {k: v for k, v in row.items() if k not in ("model", "family", "size", "export") and v != ""}
            if "rel_err" in entry:
                entry["rel_err"] = float(entry["rel_err"])
            res["rows"].append(entry)
    return list(results.values())


def git_commit() -> str:
    r = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=ROOT)
    return r.stdout.strip() or "unknown"


def main(argv: Optional[List[str]] = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--models", help="comma-separated torchvision names (default: the whole corpus)")
    p.add_argument("--families", default="classification,segmentation,detection")
    p.add_argument("--methods", default=",".join(METHODS))
    p.add_argument("--quick", action="store_true", help="the CI subset at small input sizes")
    p.add_argument("--size", type=int, help="input size for every model (default: each model's own)")
    p.add_argument("--cli", default=os.environ.get("AUTOGRAPH_CLI", str(ROOT / "build" / "autograph")))
    p.add_argument("--tolerance", type=float, default=TOLERANCE)
    p.add_argument("--timeout", type=float, default=900, help="seconds per optimize run")
    p.add_argument("--optimize-args", default="",
                   help='more arguments for every `autograph optimize`, e.g. "--no-check-rewrites --verify 0" '
                        "(every rewrite kept, the best predicted schedule: more code exercised, minutes less per model)")
    p.add_argument("--export-inductor", action="store_true",
                   help="method export: Inductor-compiled parts too (a compile per model: much longer)")
    p.add_argument("--resume", action="store_true",
                   help="keep the models already in OUT/corpus.csv and run only the others")
    p.add_argument("--out", type=Path, help="results folder (default bench/results/corpus-DATE-cpu; none with --quick)")
    p.add_argument("--worker", help=argparse.SUPPRESS)
    p.add_argument("--family", help=argparse.SUPPRESS)
    p.add_argument("--work", type=Path, help=argparse.SUPPRESS)
    a = p.parse_args(argv)
    methods = [m for m in a.methods.split(",") if m]
    extra = a.optimize_args.split()
    if a.export_inductor:  # read by the workers (method export)
        os.environ["AUTOGRAPH_CORPUS_EXPORT_INDUCTOR"] = "1"
    if a.worker:
        print(json.dumps(worker(a.worker, a.family, a.size, methods, a.cli, a.tolerance, a.timeout, a.work, extra)))
        return 0
    if not os.path.exists(a.cli):
        p.error(f"{a.cli} not found: build first (scripts/build.sh) or pass --cli")
    families = tuple(f for f in a.families.split(",") if f)
    available = dict(corpus_models(families))
    if a.quick:
        chosen = [(n, available.get(n, "segmentation"), s) for n, s in QUICK.items()]
    else:
        names = a.models.split(",") if a.models else list(available)
        unknown = [n for n in names if n not in available]
        if unknown:
            p.error(f"not torchvision {'/'.join(families)} models: {', '.join(unknown)}")
        chosen = [(n, available[n], a.size) for n in names]
    start = time.perf_counter()
    out = a.out or (None if a.quick else ROOT / "bench" / "results" / f"corpus-{datetime.date.today()}-cpu")
    command = shlex.join(["python", "bench/torchvision_corpus.py", *(argv or sys.argv[1:])])
    results = earlier_results(out / "corpus.csv") if a.resume and out else []
    done_before = {r["model"] for r in results}
    chosen = [c for c in chosen if c[0] not in done_before]
    for i, (name, family, size) in enumerate(chosen, 1):
        res = run_model(name, family, size, methods, a.cli, a.tolerance, a.timeout, tuple(extra))
        results.append(res)
        for row in res["rows"]:
            print(f"[{i}/{len(chosen)}] {name:32} {row['method']:10} {row['status']:12} {row.get('reason', '')[:100]}",
                  flush=True)
        if out:  # after every model: a long run that is stopped keeps what it measured
            write_table(flatten(results), out, command, time.perf_counter() - start, done=len(results),
                        total=len(results) + len(chosen) - i)
    rows = flatten(results)
    if out:
        print(f"wrote {out}/corpus.md and corpus.csv")
    bad = [r for r in rows if r["status"] in ("mismatch", "failed", "crashed")]
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
