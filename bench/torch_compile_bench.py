#!/usr/bin/env python3
"""torch.compile latencies of zoo models, appended to an `autograph bench` results.csv as reference columns;
with --rivals also ONNX Runtime's and OpenVINO's, and with --export-path autograph's export path.

Usage: bench/torch_compile_bench.py --zoo models/zoo --out DIR --models resnet50 bert_base
                                    [--device cpu|cuda] [--batch 1] [--warmup 50] [--runs 100]
                                    [--modes default reduce-overhead freezing] [--rivals] [--export-path]

Per model: the eager module from models/registry.py with the weights of ZOO/NAME.pt loaded into it
(same state-dict keys, so exactly the exported weights), inputs shaped from ZOO/NAME.json with the
batch replaced and drawn as `autograph bench` draws them (CPU generator, seed 0). Reference = the
TorchScript module as loaded (the `jit` method). Per mode: search_s = torch.compile plus the first call
(where the compiling happens; inductor's on-disk caches off unless --use-compile-cache, and the compiler's
one-time start-up paid before the first model); then warm-up and timed runs under torch.inference_mode,
timed with CUDA events on the current stream (CUDA) or perf_counter (CPU); `autograph bench` times wall
clock with a synchronize per run, so on CUDA these columns read slightly low by comparison. One row per
(model, mode), method torch_compile_<mode with - as _>, is appended to DIR/results.csv (header written
when the file is absent). Run it after `autograph bench`, which overwrites results.csv. Mode
`freezing` is the default mode with Inductor's weight freezing (what a CPU user tries for speed).
--rivals (CPU): methods onnxruntime (CPU execution provider, sequential executor) and openvino (latency
hint, f32), both from one ONNX export (bench/rivals.py; search_s = export and session set-up; a rival
whose package is missing is reported and skipped, never faked). --export-path: method
autograph_export, the model exported with torch.export and optimized by autograph.optimize (Inductor
parts on; search_s = export and optimize).
Exit 0 when at least one row was written, 1 when none, 2 on bad arguments.
"""
import argparse
import csv
import json
import os
import sys
import time
import warnings
from pathlib import Path
from typing import Callable, List, Optional, Sequence

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

CSV_FIELDS = ["model", "batch", "device", "method", "median_ms", "p10_ms", "p90_ms", "max_abs_err", "max_rel_err",
              "search_s"]
MODES = ["default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs", "freezing"]
INPUT_SEED = 0  # autograph bench's MakeExampleInputs seed: both tools time the same input values
PROG = "torch_compile_bench"


def method_name(mode: str) -> str:
    return "torch_compile_" + mode.replace("-", "_")


def percentile(values: Sequence[float], q: float) -> float:
    """Linear interpolation between closest ranks (numpy's default, and the CLI's Percentile)."""
    ordered = sorted(values)
    pos = q * (len(ordered) - 1)
    lo = int(pos)
    hi = min(lo + 1, len(ordered) - 1)
    return ordered[lo] + (pos - lo) * (ordered[hi] - ordered[lo])


def flatten_tensors(value) -> list:
    import torch
    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, (tuple, list)):
        return [t for v in value for t in flatten_tensors(v)]
    if isinstance(value, dict):
        return [t for v in value.values() for t in flatten_tensors(v)]
    raise TypeError(f"unsupported output type {type(value).__name__}")


def output_errors(got: list, reference: list) -> tuple:
    """(max abs err, max rel err) as the CLI computes them: per output |got - ref|max / |ref|max, max over outputs."""
    if len(got) != len(reference):
        raise RuntimeError(f"{len(got)} outputs, the TorchScript module gives {len(reference)}")
    max_abs = max_rel = 0.0
    for g, r in zip(got, reference):
        if g.shape != r.shape:
            raise RuntimeError(f"output shape {tuple(g.shape)}, the TorchScript module gives {tuple(r.shape)}")
        abs_err = (g.double() - r.double()).abs().max().item() if r.numel() else 0.0
        scale = r.double().abs().max().item() if r.numel() else 0.0
        max_abs = max(max_abs, abs_err)
        max_rel = max(max_rel, abs_err / scale if scale > 0 else abs_err)
    return max_abs, max_rel


def make_inputs(spec_path: Path, batch: int, device, seed: int = INPUT_SEED) -> list:
    """Inputs from NAME.json, batch replaced; same generator, seed and draw order as autograph's MakeExampleInputs
    (another seed: other values of the same shapes, for checking outputs on an input the methods were not built on)."""
    import torch
    specs = json.loads(spec_path.read_text())["inputs"]
    gen = torch.Generator()
    gen.manual_seed(seed)
    inputs = []
    for s in specs:
        shape = [batch] + list(s["shape"][1:])
        dtype = getattr(torch, s["dtype"])
        if dtype.is_floating_point:
            t = torch.randn(shape, generator=gen, dtype=torch.float32).to(dtype)
        elif dtype == torch.bool:
            t = torch.randint(0, 2, shape, generator=gen, dtype=torch.int64).to(torch.bool)
        else:
            t = torch.randint(0, max(int(s.get("high", 1)), 1), shape, generator=gen, dtype=dtype)
        inputs.append(t.to(device))
    return inputs


def load_eager_model(name: str, scripted, device):
    """registry.construct(name) with the TorchScript module's state dict: the exported weights exactly,
    without re-running build()'s normalisation calibration."""
    from models import registry
    model = registry.construct(name)
    model.load_state_dict(scripted.state_dict(), strict=True)  # raises when the keys do not match
    return model.eval().to(device)


def time_runs(call: Callable[[], object], warmup: int, runs: int, cuda: bool) -> List[float]:
    """Milliseconds per call. CUDA: events recorded on the current stream around each call (device
    time from the first launch to the last kernel's end); CPU: perf_counter wall time."""
    import torch
    for _ in range(warmup):
        call()
    if not cuda:
        times = []
        for _ in range(runs):
            start = time.perf_counter()
            call()
            times.append((time.perf_counter() - start) * 1e3)
        return times
    torch.cuda.synchronize()
    stream = torch.cuda.current_stream()
    times = []
    for _ in range(runs):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record(stream)
        call()
        end.record(stream)
        end.synchronize()
        times.append(start.elapsed_time(end))
    return times


def bench_mode(model, inputs, reference, mode: str, args, cuda: bool) -> dict:
    import torch
    torch._dynamo.reset()  # every mode compiles from scratch: no cache hits, no recompile-limit carry-over
    uses_cudagraphs = cuda and mode in ("reduce-overhead", "max-autotune")

    def sync():
        if cuda:
            torch.cuda.synchronize()

    start = time.perf_counter()
    # (options make it a backend of its own: dynamo's cache does not hand it another mode's graph)
    compiled = (torch.compile(model, options={"freezing": True}) if mode == "freezing"
                else torch.compile(model, mode=mode))

    def call():
        if uses_cudagraphs:
            # Each call starts a new cudagraph-tree generation: outputs of the previous one may be overwritten.
            torch.compiler.cudagraph_mark_step_begin()
        return compiled(*inputs)

    import torch._inductor.config
    # options={"freezing": True} alone does not freeze in torch 2.11 (the weights stay graph inputs);
    # Inductor's global setting during the compiling call does.
    with torch.inference_mode(), torch._inductor.config.patch(freezing=mode == "freezing"):
        call()
        sync()
        search_s = time.perf_counter() - start
    return bench_callable(call, reference, search_s, args, cuda)


def bench_callable(call, reference, ready_s: float, args, cuda: bool) -> dict:
    """A method that is ready to run (its set-up took ready_s): outputs checked, then timed."""
    import torch
    with torch.inference_mode():
        # Compared before the next call: under CUDA graphs the outputs live in the graph's memory pool.
        max_abs, max_rel = output_errors(flatten_tensors(call()), reference)
        times = time_runs(call, args.warmup, args.runs, cuda)
    return {"median_ms": percentile(times, 0.5), "p10_ms": percentile(times, 0.1), "p90_ms": percentile(times, 0.9),
            "max_abs_err": max_abs, "max_rel_err": max_rel, "search_s": ready_s}


def rival_methods(model, inputs, device):
    """{method: (call, ready seconds)} for ONNX Runtime and OpenVINO, and {method: why not}."""
    import tempfile
    if device.type != "cpu":
        why = "CPU only here (ONNX Runtime's CUDA provider is not installed on the GPU machine)"
        return {}, {"onnxruntime": why, "openvino": why}
    sys.path.insert(0, str(ROOT / "bench"))
    import rivals
    with tempfile.TemporaryDirectory() as workdir:
        return rivals.rivals(model, inputs, Path(workdir))


def export_path_method(model, inputs):
    """autograph's export path: (call, seconds to export and optimize)."""
    import torch
    sys.path.insert(0, str(ROOT / "python"))
    import autograph
    start = time.perf_counter()
    ep = torch.export.export(model, tuple(inputs), strict=False)
    optimized, _ = autograph.optimize(ep)
    module = optimized.module()
    return (lambda: module(*inputs)), time.perf_counter() - start


def warm_up_compiler(device) -> None:
    """Compile a trivial function once, so the first model's search_s does not carry the one-time cost
    of importing inductor, probing the C++ compiler / CPU ISA and starting the compile workers (long on
    a small CPU box)."""
    import torch
    torch._dynamo.reset()
    with torch.inference_mode():
        torch.compile(lambda x: torch.relu(x) * 2.0 + 1.0)(torch.ones(64, device=device))
    if device.type == "cuda":
        torch.cuda.synchronize()
    torch._dynamo.reset()


def one_line(error: BaseException) -> str:
    lines = [ln.strip() for ln in str(error).splitlines() if ln.strip()]
    text = f"{type(error).__name__}: {lines[0] if lines else ''}"
    return text if len(text) <= 300 else text[:297] + "..."


def append_rows(csv_path: Path, rows: List[dict]) -> None:
    """Append to results.csv; the header only when the file is new or empty."""
    new_file = not csv_path.exists() or csv_path.stat().st_size == 0
    with csv_path.open("a", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=CSV_FIELDS, lineterminator="\n")
        if new_file:
            writer.writeheader()
        for row in rows:
            writer.writerow({k: (f"{v:.6g}" if isinstance(v, float) else v) for k, v in row.items()})


def parse_args(argv: Optional[List[str]]) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog=PROG, description=__doc__.split("\n\n")[0],
                                epilog=__doc__.split("\n\n", 1)[1], formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--zoo", type=Path, default=ROOT / "models" / "zoo", help="directory of NAME.pt and NAME.json")
    p.add_argument("--models", nargs="+", required=True, metavar="NAME", help="zoo model names")
    p.add_argument("--device", choices=["cpu", "cuda"], default=None, help="default: cuda when available, else cpu")
    p.add_argument("--batch", type=int, default=1)
    p.add_argument("--warmup", type=int, default=50, help="warm-up runs after the first (compiling) call")
    p.add_argument("--runs", type=int, default=100, help="timed runs")
    p.add_argument("--modes", nargs="*", choices=MODES, default=["default", "reduce-overhead"],
                   help="torch.compile modes (default: default reduce-overhead; none: --modes alone)")
    p.add_argument("--rivals", action="store_true", help="also ONNX Runtime and OpenVINO (CPU; bench/rivals.py)")
    p.add_argument("--export-path", action="store_true",
                   help="also autograph's export path (torch.export, then autograph.optimize with Inductor parts)")
    p.add_argument("--out", type=Path, required=True, help="directory of results.csv (created when missing)")
    p.add_argument("--threads", type=int, default=None,
                   help="intra-op CPU threads (default: torch's default, as `autograph bench` uses); inductor's "
                        "CPU kernels are OpenMP loops that slow down badly when another process shares the cores")
    p.add_argument("--use-compile-cache", action="store_true",
                   help="let inductor reuse its on-disk caches; by default they are off so that search_s is a "
                        "cold compile of each mode (with them, a second mode or a rerun mostly hits the cache)")
    return p.parse_args(argv)


def check_args(args: argparse.Namespace) -> Optional[str]:
    """The first problem with the arguments, or None: checked before any model is loaded."""
    from models import registry
    if args.batch < 1:
        return f"--batch must be >= 1, got {args.batch}"
    if args.threads is not None and args.threads < 1:
        return f"--threads must be >= 1, got {args.threads}"
    if args.runs < 1 or args.warmup < 0:
        return f"--runs must be >= 1 and --warmup >= 0, got {args.runs} and {args.warmup}"
    unknown = [m for m in args.models if m not in registry.MODELS]
    if unknown:
        return f"unknown model name(s): {', '.join(unknown)} (known: {', '.join(registry.NAMES)})"
    missing = [str(args.zoo / f"{m}{ext}") for m in args.models for ext in (".pt", ".json")
               if not (args.zoo / f"{m}{ext}").is_file()]
    if missing:
        return f"missing in the zoo: {', '.join(missing)} (export with models/export.py --out {args.zoo})"
    return None


def prepare_model(name: str, args, device):
    """(eager model, inputs, the zoo module's outputs): the reference of every method's errors."""
    import torch
    scripted = torch.jit.load(str(args.zoo / f"{name}.pt"), map_location=device).eval()
    model = load_eager_model(name, scripted, device)
    inputs = make_inputs(args.zoo / f"{name}.json", args.batch, device)
    with torch.inference_mode():
        reference = [t.clone() for t in flatten_tensors(scripted(*inputs))]
        # The eager model must be the exported one, or the compiled errors would mean nothing.
        _, eager_rel = output_errors(flatten_tensors(model(*inputs)), reference)
    if not eager_rel <= 1e-3:
        raise RuntimeError(f"eager model differs from {name}.pt (max rel err {eager_rel:.3g})")
    return model, inputs, reference


def model_methods(name: str, model, inputs, reference, args, device) -> List[tuple]:
    """(method, run() -> the row's timing and errors) of each method asked for, in the table's order."""
    cuda = device.type == "cuda"
    methods = [(method_name(mode), (lambda m: lambda: bench_mode(model, inputs, reference, m, args, cuda))(mode))
               for mode in args.modes]
    if args.rivals:
        try:
            made, missing = rival_methods(model, inputs, device)
        except Exception as e:  # noqa: BLE001 - the rivals are reported, the rest goes on
            made, missing = {}, {"onnxruntime and openvino": one_line(e)}
        for rival, why in missing.items():
            print(f"{PROG}: {name} {rival}: skipped: {why}", file=sys.stderr, flush=True)
        methods += [(rival, (lambda c, s: lambda: bench_callable(c, reference, s, args, cuda))(call, ready_s))
                    for rival, (call, ready_s) in made.items()]
    if args.export_path:
        def export_run():
            call, ready_s = export_path_method(model, inputs)
            return bench_callable(call, reference, ready_s, args, cuda)
        methods.append(("autograph_export", export_run))
    return methods


def main(argv: Optional[List[str]] = None) -> int:
    args = parse_args(argv)
    problem = check_args(args)
    if problem:
        print(f"{PROG}: {problem}", file=sys.stderr)
        return 2

    import torch
    warnings.filterwarnings("ignore", r"`torch\.jit\.\w+` is deprecated", DeprecationWarning)
    if args.device is None:
        args.device = "cuda" if torch.cuda.is_available() else "cpu"
    if args.device == "cuda" and not torch.cuda.is_available():
        print(f"{PROG}: --device cuda asked for, but no CUDA device is available here", file=sys.stderr)
        return 2
    if args.threads is not None:
        torch.set_num_threads(args.threads)
    if not args.use_compile_cache:
        import tempfile
        import torch._inductor.config
        torch._inductor.config.force_disable_caches = True
        # autograph's own cache of compiled parts too: the export path's search_s is a cold optimize.
        scratch = tempfile.TemporaryDirectory(prefix="autograph-inductor-")  # removed when main returns
        os.environ["AUTOGRAPH_CACHE_DIR"] = scratch.name
    warnings.filterwarnings("ignore", "dynamo_pgo force disabled", UserWarning)
    cuda = args.device == "cuda"
    device = torch.device(args.device)
    try:
        warm_up_compiler(device)
    except Exception as e:
        print(f"{PROG}: torch.compile does not work here at all: {one_line(e)}", file=sys.stderr)
        return 1
    args.out.mkdir(parents=True, exist_ok=True)
    csv_path = args.out / "results.csv"

    written = 0
    for name in dict.fromkeys(args.models):
        try:
            model, inputs, reference = prepare_model(name, args, device)
        except Exception as e:  # one model's failure must not stop the others
            print(f"{PROG}: {name}: skipped, cannot prepare the model: {one_line(e)}", file=sys.stderr, flush=True)
            continue
        for method, run in model_methods(name, model, inputs, reference, args, device):
            try:
                result = run()
            except Exception as e:
                print(f"{PROG}: {name} {method}: skipped: {one_line(e)}", file=sys.stderr, flush=True)
                if cuda:
                    torch.cuda.empty_cache()
                continue
            row = {"model": name, "batch": args.batch, "device": str(device), "method": method, **result}
            append_rows(csv_path, [row])  # row by row: a later crash (e.g. OOM kill) keeps the finished rows
            written += 1
            print(f"{name:<18}{method:<32}{result['median_ms']:.3f} ms (p10 {result['p10_ms']:.3f}, "
                  f"p90 {result['p90_ms']:.3f}), max rel err {result['max_rel_err']:.3e}, "
                  f"compile {result['search_s']:.1f} s", file=sys.stderr, flush=True)
        torch._dynamo.reset()
    if written == 0:
        print(f"{PROG}: no row could be produced", file=sys.stderr)
        return 1
    print(f"{PROG}: {written} row(s) appended to {csv_path}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
