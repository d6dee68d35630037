#!/usr/bin/env python3
"""INT8 on a CPU judged by the user's accuracy measure: autograph's precision="int8" (OpenVINO's candidates
quantized by NNCF aimed at the measure, part by part where the whole graph misses the bound; ONNX Runtime's
whole graph by its static quantization) and bf16 beside OpenVINO's own
INT8 through NNCF (plain, and with accuracy control at the same bound), ONNX Runtime's INT8
(quantize_static) and OpenVINO at f32 and bf16, model by model.

    python bench/int8.py [--models a,b] [--unseen c,d] [--trained e,f] [--calibration N] [--fresh N]
                         [--accuracy max_error|top1|cosine|sqnr] [--tolerance T] [--repeats N]
                         [--accuracy-control] [--no-autograph] [--out DIR]

For each model: N calibration inputs (the registry's inputs of other seeds; --trained: the model's own
realistic inputs, bench/trained_models.py) on which every INT8 method calibrates and autograph's gate
judges, and --fresh more that none of them saw. The ONNX export read by OpenVINO, compiled at f32 and with
the bf16 hint, and quantized by nncf.quantize on the calibration inputs (the quantized layers run INT8,
the others float32; token-id inputs: NNCF's transformer preset); ONNX Runtime's quantize_static on the same
inputs (after its quant_pre_process; QDQ format, weights per channel, min-max calibration); with
--accuracy-control nncf.quantize_with_accuracy_control, its validation the same measure on the calibration
inputs and its max_drop the tolerance (slow). autograph: optimize with precision bf16 and int8, option
accuracy and tolerance as given, the calibration inputs. Each method is judged on the fresh inputs by
--accuracy (autograph.export.measure: the loss option tolerance bounds), against eager float32; times are
side by side on the example (warm-up, then each method once per round), median ms. Every optimize and
torch.compile starts from cold compile caches (Inductor's and autograph's: bench/export_path.py's
fresh_compile_caches), so its time is a first optimize's. Writes DIR/results.csv
and DIR/README.md. NNCF is read from where scripts/setup.sh installs it for autograph
(autograph.export.compilers.openvino.nncf_dir(): apart from the venv, as its dependency tabulate turns an
unhandled Ctrl-C's exit status into 1 in a process that imported torch). A benchmark, never a test.
"""
import argparse
import csv
import json
import math
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "python"), str(ROOT / "bench")]
import autograph  # noqa: E402
import rivals  # noqa: E402  (bench/rivals.py)
from export_path import fresh_compile_caches  # noqa: E402  (bench/export_path.py)
import trained_models  # noqa: E402  (bench/trained_models.py)
from autograph.export.compilers.openvino import nncf_dir  # noqa: E402
from autograph.export.measure import measured  # noqa: E402
from autograph.export.timing import samples_side_by_side  # noqa: E402
from models import registry  # noqa: E402
from precision import _unseen  # noqa: E402  (bench/precision.py: torchvision models the zoo lacks)

DEFAULT_MODELS = "squeezenet,resnet50,inception_v3,bert_base,randwire"
METHODS = ("openvino_f32", "openvino_bf16", "openvino_int8", "openvino_int8_ac", "onnxruntime_f32",
           "onnxruntime_int8", "compile_autocast_bf16", "autograph_bf16", "autograph_int8")
INT8_METHODS = ("openvino_int8", "openvino_int8_ac", "onnxruntime_int8", "autograph_int8")


def _inputs(name, args):
    """The model, its example inputs, the calibration inputs and the fresh ones (tuples of tensors)."""
    count = args.calibration + args.fresh
    if name in args.trained:
        model, example, more = trained_models.build(name, 1 + count)
    elif name in args.unseen:
        model, example = _unseen(name)
        gen = torch.Generator().manual_seed(1)
        more = [(torch.randn(example[0].shape, generator=gen),) for _ in range(count)]
    else:
        model, example = registry.build(name), tuple(registry.make_inputs(name))
        more = [tuple(registry.make_inputs(name, seed=s)) for s in range(1, count + 1)]
    return model.eval(), example, more[:args.calibration], more[args.calibration:]


def _loss(outputs, references, args) -> float:
    """The accuracy measure's loss of each call's outputs (arrays or tensors, in order) against the
    references, over all of them (autograph.export.measure, as option accuracy judges)."""
    def tensors(call):
        return [torch.as_tensor(np.asarray(t)) for t in call]
    return measured(args.accuracy, [tensors(c) for c in outputs], [tensors(c) for c in references])[0]


def _judged(compiled, items, references, args) -> float:
    results = [compiled(item) for item in items]
    return _loss([[r[o] for o in compiled.outputs] for r in results], references, args)


def _onnxruntime(path: Path, data, row, args) -> dict:
    """ONNX Runtime at f32 and its INT8 (quantize_static on the calibration items): {method: run on the
    example}, each judged on the fresh items (losses in `row`)."""
    from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType, quantize_static
    from onnxruntime.quantization.shape_inference import quant_pre_process

    f32 = rivals.onnxruntime_session(path)
    names = [i.name for i in f32.get_inputs()]
    feeds = {k: [dict(zip(names, item)) for item in items] for k, items in data["items"].items()}

    class Reader(CalibrationDataReader):
        def __init__(self):
            self.left = iter(feeds["calibration"])

        def get_next(self):
            return next(self.left, None)
    quantized, prepared = path.with_name("model_int8.onnx"), path.with_name("model_prepared.onnx")
    start = time.perf_counter()
    try:  # the pre-processing ONNX Runtime's quantization guide asks for (shapes inferred, graph optimized)
        quant_pre_process(str(path), str(prepared))
    except Exception:  # noqa: BLE001 - the quantizer takes the model as exported too
        prepared = path
    quantize_static(str(prepared), str(quantized), Reader(), quant_format=QuantFormat.QDQ, per_channel=True,
                    activation_type=QuantType.QUInt8, weight_type=QuantType.QInt8)
    row["onnxruntime_int8_quantize_s"] = round(time.perf_counter() - start, 1)
    runs = {}
    for method, made in (("onnxruntime_f32", f32), ("onnxruntime_int8", rivals.onnxruntime_session(quantized))):
        row[f"{method}_loss"] = _loss([made.run(None, feed) for feed in feeds["fresh"]], data["references"], args)
        runs[method] = lambda made=made: made.run(None, feeds["example"][0])
    return runs


def _compile_autocast(model, example, fresh, references, row, args) -> dict:
    """torch.compile (Inductor, weights frozen) run under CPU autocast to bfloat16, judged on the fresh
    inputs (its outputs read as float32): {method: run on the example}."""
    import torch._inductor.config as inductor_config

    fresh_compile_caches()
    compiled = torch.compile(model)

    def run(inputs):
        with torch.no_grad(), torch.autocast("cpu", dtype=torch.bfloat16):
            return [t.float() for t in torch.utils._pytree.tree_leaves(compiled(*inputs))]
    start = time.perf_counter()
    with inductor_config.patch(freezing=True):  # frozen where compiled: on the first call
        run(example)
    row["compile_autocast_bf16_compile_s"] = round(time.perf_counter() - start, 1)
    row["compile_autocast_bf16_loss"] = _loss([run(x) for x in fresh], references, args)
    return {"compile_autocast_bf16": lambda: run(example)}


def _autograph(model, example, calibration, fresh, references, row, args) -> dict:
    """autograph's export path at bf16 and int8 (option accuracy and tolerance as given, the calibration
    inputs), each judged on the fresh inputs: {method: run on the example}."""
    runs = {}
    for precision in ("bf16", "int8"):
        key = f"autograph_{precision}"
        fresh_compile_caches()  # each optimize's time is a first optimize's: no compile reused
        start = time.perf_counter()
        try:
            optimized, report = autograph.optimize(torch.export.export(model, example, strict=False), example,
                                                   precision=precision, accuracy=args.accuracy,
                                                   tolerance=args.tolerance, calibration=calibration)
        except Exception as e:  # noqa: BLE001 - the row says what failed
            row[f"{key}_error"] = str(e).splitlines()[0][:200]
            continue
        row[f"{key}_optimize_s"] = round(time.perf_counter() - start, 1)
        if args.out:  # each optimize's report beside the table: what was kept, tried and spent where
            reports = Path(args.out) / "reports"
            reports.mkdir(parents=True, exist_ok=True)
            (reports / f"{row['model']}_{precision}.json").write_text(json.dumps(report, indent=1, default=str))
        contest = report.get("inductor") or {}
        kept = contest.get("kept", "aten")
        listed = contest.get("candidates", {}).get(kept, {}).get("parts_precision")
        row[f"{key}_kept"] = kept + (f" ({sum(p['precision'] != 'fp32' for p in listed)}/{len(listed)} parts lowered)"
                                     if listed else "")
        module = optimized.module()
        with torch.no_grad():
            row[f"{key}_loss"] = _loss([torch.utils._pytree.tree_leaves(module(*x)) for x in fresh], references, args)
        runs[key] = lambda module=module: module(*example)
    return runs


def measure(name, args) -> dict:
    import openvino as ov
    sys.path.append(nncf_dir())  # where scripts/setup.sh installs it for autograph
    try:
        import nncf
    except ImportError:
        nncf = None
    torch.manual_seed(0)
    model, example, calibration, fresh = _inputs(name, args)
    with torch.no_grad():
        references = [[t.numpy() for t in torch.utils._pytree.tree_leaves(model(*b))] for b in fresh]
    items = {k: [[t.numpy() for t in b] for b in batches]
             for k, batches in (("example", [example]), ("calibration", calibration), ("fresh", fresh))}
    data = {"items": items, "references": references}
    core = ov.Core()
    row = {"model": name}
    with tempfile.TemporaryDirectory() as workdir:
        path = Path(workdir) / "model.onnx"
        try:
            rivals.export_onnx(model, example, path)
        except Exception as e:  # noqa: BLE001 - no ONNX Runtime rows; OpenVINO converts the module itself
            row["onnxruntime_error"] = f"ONNX export failed: {str(e).splitlines()[0][:300]}"
            read, runs = rivals.openvino_model(model, example), {}
        else:
            read = core.read_model(str(path))
            runs = _onnxruntime(path, data, row, args)
    try:
        runs.update(_compile_autocast(model, example, fresh, references, row, args))
    except Exception as e:  # noqa: BLE001 - the row says what failed
        row["compile_autocast_bf16_error"] = str(e).splitlines()[0][:200]
    if not args.no_autograph:
        runs.update(_autograph(model, example, calibration, fresh, references, row, args))
    models = {"openvino_f32": (read, "f32"), "openvino_bf16": (read, "bf16")}
    if nncf is not None:
        models.update(_openvino_int8(nncf, read, data, row, args, example))
    return _timed(row, core, models, data, runs, args)


def _openvino_int8(nncf, read, data, row, args, example) -> dict:
    """OpenVINO's INT8 by NNCF on the calibration items, and with --accuracy-control NNCF's accuracy-controlled
    quantization at the same measure and bound: {method: (model, inference precision hint)}."""
    items = data["items"]["calibration"]
    # Token ids for inputs: a transformer (NNCF then keeps its softmax and normalizations in float).
    kind = {"model_type": nncf.ModelType.TRANSFORMER} if any(b.dtype != torch.float32 for b in example) else {}
    start = time.perf_counter()
    models = {"openvino_int8": (nncf.quantize(read, nncf.Dataset(items), subset_size=len(items), **kind), "f32")}
    row["openvino_int8_quantize_s"] = round(time.perf_counter() - start, 1)
    if args.accuracy_control:
        from nncf.quantization.advanced_parameters import AdvancedAccuracyRestorerParameters
        with torch.no_grad():
            want = [[np.asarray(t) for t in call] for call in _outputs_of(read, items)]

        def validate(compiled, _data):  # higher is better: 1 - the loss against float32 (float32's own: 1)
            return 1.0 - _judged(compiled, items, want, args)
        start = time.perf_counter()
        restored = nncf.quantize_with_accuracy_control(
            read, nncf.Dataset(items), nncf.Dataset(items), validate, max_drop=args.tolerance, subset_size=len(items),
            advanced_accuracy_restorer_parameters=AdvancedAccuracyRestorerParameters(num_ranking_workers=1), **kind)
        row["openvino_int8_ac_quantize_s"] = round(time.perf_counter() - start, 1)
        row["openvino_int8_ac_fake_quantize"] = sum(op.get_type_name() == "FakeQuantize" for op in restored.get_ops())
        models["openvino_int8_ac"] = (restored, "f32")
    return models


def _outputs_of(model, items):
    """`model` (OpenVINO's, float32) run on each item: its outputs in order."""
    import openvino as ov
    compiled = ov.Core().compile_model(model, "CPU", {"INFERENCE_PRECISION_HINT": "f32"})
    return [[r[o] for o in compiled.outputs] for r in (compiled(item) for item in items)]


def _timed(row, core, models, data, runs, args) -> dict:
    """`row` with each OpenVINO model's loss on the fresh items and every method's median ms, timed side by
    side on the example."""
    example = data["items"]["example"][0]
    for method, (m, hint) in models.items():
        compiled = core.compile_model(m, "CPU", {"PERFORMANCE_HINT": "LATENCY", "INFERENCE_PRECISION_HINT": hint})
        row[f"{method}_loss"] = _judged(compiled, data["items"]["fresh"], data["references"], args)
        request = compiled.create_infer_request()
        runs[method] = lambda request=request: request.infer(example)
    with torch.no_grad():
        for method, xs in samples_side_by_side(runs, torch.device("cpu"), args.repeats, warmup=3).items():
            row[f"{method}_median_ms"] = statistics.median(xs)
    return row


def write(rows, args) -> None:
    args.out.mkdir(parents=True, exist_ok=True)
    keys = sorted({k for r in rows for k in r} - {"model"})
    with (args.out / "results.csv").open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=["model"] + keys)
        writer.writeheader()
        writer.writerows(rows)
    methods = [m for m in METHODS if any(f"{m}_median_ms" in r for r in rows)]
    lines = [f"`python bench/int8.py {' '.join(sys.argv[1:])}` ({torch.get_num_threads()} threads, torch "
             f"{torch.__version__}). Median ms (the {args.accuracy} loss on {args.fresh} inputs no method calibrated "
             f"on, against eager float32); within: INT8 methods at or under the bound {args.tolerance:g}; "
             "ratios: the other's time ÷ autograph int8's.", "",
             "| model | " + " | ".join(methods) + " | int8 within | autograph int8 kept | ÷ autograph bf16 "
             "| ÷ OpenVINO bf16 | ÷ best INT8 rival within | ÷ best rival within |",
             "|---|" + "---:|" * len(methods) + "---|---|---:|---:|---:|---:|"]
    for r in rows:
        cells = []
        for m in methods:
            ms, loss = r.get(f"{m}_median_ms"), r.get(f"{m}_loss", math.nan)
            cells.append("–" if ms is None else f"{ms:.2f} ({loss:.2g})")
        # autograph's int8 counts where its kept program computes in int8 (else it kept a float program)
        within = [m for m in INT8_METHODS if r.get(f"{m}_loss", math.inf) <= args.tolerance
                  and (m != "autograph_int8" or "int8" in str(r.get("autograph_int8_kept", "")))]
        ours = r.get("autograph_int8_median_ms")
        rival = min((r[f"{m}_median_ms"] for m in within if m != "autograph_int8" and f"{m}_median_ms" in r),
                    default=None)
        # any rival, whatever its precision, whose outputs on the fresh inputs are within the bound
        any_rival = min((r[f"{m}_median_ms"] for m in methods if not m.startswith("autograph_")
                         and r.get(f"{m}_loss", math.inf) <= args.tolerance), default=None)

        def over(ms):
            return f"{ms / ours:.2f}×" if ms and ours else "–"
        lines.append(f"| {r['model']} | " + " | ".join(cells) + f" | {', '.join(within) or 'none'} | "
                     f"{r.get('autograph_int8_kept', '–')} | {over(r.get('autograph_bf16_median_ms'))} | "
                     f"{over(r.get('openvino_bf16_median_ms'))} | {over(rival)} | {over(any_rival)} |")
    (args.out / "README.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default=DEFAULT_MODELS)
    parser.add_argument("--unseen", default="", help="torchvision models the zoo lacks (random weights)")
    parser.add_argument("--trained", default="", help="models with trained weights (bench/trained_models.py): "
                        + ", ".join(trained_models.MODELS))
    parser.add_argument("--calibration", type=int, default=8, help="calibration inputs besides the example")
    parser.add_argument("--fresh", type=int, default=4, help="inputs no method calibrated on, each judged on")
    parser.add_argument("--accuracy", default="max_error", help="the measure (option accuracy's built-ins)")
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--tolerance", type=float, default=0.01, help="the bound of the measure")
    parser.add_argument("--accuracy-control", action="store_true")
    parser.add_argument("--no-autograph", action="store_true", help="the rivals alone")
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "int8-cpu")
    args = parser.parse_args()
    args.unseen = [m for m in args.unseen.split(",") if m]
    args.trained = [m for m in args.trained.split(",") if m]
    rows = []
    for name in [m for m in args.models.split(",") if m] + args.unseen + args.trained:
        print(f"{name} ...", flush=True)
        try:
            rows.append(measure(name, args))
        except Exception as e:  # noqa: BLE001 - one model failing must not lose the others'
            print(f"{name}: failed: {str(e).splitlines()[0][:200]}", flush=True)
        if rows:
            write(rows, args)  # after each model: a long run stopped midway keeps what it measured
    return 0


if __name__ == "__main__":
    sys.exit(main())
