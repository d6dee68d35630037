#!/usr/bin/env python3
"""Whether INT8 on a CPU can meet option tolerance: OpenVINO's INT8 through NNCF's post-training
quantization and ONNX Runtime's (quantize_static), beside OpenVINO at f32 and bf16, model by model.

    python bench/int8.py [--models a,b] [--unseen c,d] [--calibration N] [--repeats N] [--tolerance T]
                         [--accuracy-control] [--out DIR]

For each model: the ONNX export read by OpenVINO, compiled at f32 and with the bf16 hint, and quantized
by nncf.quantize on N calibration inputs (the registry's inputs of other seeds, plus the example) and
compiled at f32 (the quantized layers run INT8, the others float32); and by ONNX Runtime's quantize_static
on the same inputs (after its quant_pre_process; QDQ format, weights per channel, min-max calibration:
its defaults besides per-channel weights), run by its CPU provider. Each method's error is its largest
over the example and the calibration inputs against eager float32, relative to the output's scale (as
option tolerance measures it); times are side by side on the example (warm-up, then each method once per
round), median ms. --accuracy-control adds nncf.quantize_with_accuracy_control (layers reverted to float
until the error on those inputs is within the tolerance), with how long it took: slow, one model at a
time. Writes DIR/results.csv and DIR/README.md. OpenVINO's INT8 needs NNCF (`pip install nncf`; without
it those columns are left out), best in an environment of its own (or `pip install --target DIR` and
DIR on PYTHONPATH for this script alone): its dependency tabulate makes every process that imported
torch._dynamo exit with status 1 instead of by the signal after an unhandled Ctrl-C (torch's atexit
handler imports tabulate, and on Python 3.11 an import at exit loses the interrupt's status), which
tests/python/test_optimize_interrupted.py checks. A benchmark, never a test.
"""
import argparse
import csv
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
import rivals  # noqa: E402  (bench/rivals.py)
from autograph.export.check import relative_error  # noqa: E402
from autograph.export.timing import samples_side_by_side  # noqa: E402
from models import registry  # noqa: E402
from precision import _unseen  # noqa: E402  (bench/precision.py: torchvision models the zoo lacks)

DEFAULT_MODELS = "squeezenet,resnet50,inception_v3,bert_base,randwire"
METHODS = ("openvino_f32", "openvino_bf16", "openvino_int8", "openvino_int8_ac", "onnxruntime_f32",
           "onnxruntime_int8")


def _inputs(name, args):
    """The example inputs and the calibration inputs (lists of numpy arrays), and the model."""
    if name in args.unseen:
        model, example = _unseen(name)
        gen = torch.Generator().manual_seed(1)
        others = [(torch.randn(example[0].shape, generator=gen),) for _ in range(args.calibration)]
    else:
        model, example = registry.build(name), tuple(registry.make_inputs(name))
        others = [tuple(registry.make_inputs(name, seed=s)) for s in range(1, args.calibration + 1)]
    return model.eval(), example, others


def _largest_error(outputs, references) -> float:
    """The largest error, relative to its output's scale, of each call's outputs (arrays, in order), as the
    export path's accuracy gate measures it."""
    return max((relative_error(torch.from_numpy(np.asarray(got)), torch.from_numpy(np.asarray(want)))
                for got_call, want_call in zip(outputs, references) for got, want in zip(got_call, want_call)),
               default=0.0)


def _error(compiled, items, references) -> float:
    results = [compiled(item) for item in items]
    return _largest_error([[r[o] for o in compiled.outputs] for r in results], references)


def _onnxruntime(path: Path, items, references, row) -> dict:
    """ONNX Runtime at f32 and its INT8 (quantize_static on `items`): {method: run}, errors in `row`."""
    from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType, quantize_static
    from onnxruntime.quantization.shape_inference import quant_pre_process

    f32 = rivals.onnxruntime_session(path)
    feeds = [dict(zip([i.name for i in f32.get_inputs()], item)) for item in items]

    class Reader(CalibrationDataReader):
        def __init__(self):
            self.left = iter(feeds)

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
        row[f"{method}_rel_err"] = _largest_error([made.run(None, feed) for feed in feeds], references)
        runs[method] = lambda made=made: made.run(None, feeds[0])
    return runs


def measure(name, args) -> dict:
    import openvino as ov
    try:
        import nncf
    except ImportError:
        nncf = None
    torch.manual_seed(0)
    model, example, others = _inputs(name, args)
    batches = [example] + others
    with torch.no_grad():
        references = [[t.numpy() for t in torch.utils._pytree.tree_leaves(model(*b))] for b in batches]
    items = [[t.numpy() for t in b] for b in batches]
    core = ov.Core()
    row = {"model": name}
    with tempfile.TemporaryDirectory() as workdir:
        path = Path(workdir) / "model.onnx"
        rivals.export_onnx(model, example, path)
        read = core.read_model(str(path))
        runs = _onnxruntime(path, items, references, row)
    models = {"openvino_f32": (read, "f32"), "openvino_bf16": (read, "bf16")}
    if nncf is None:
        return _timed(row, core, models, items, references, runs, args)
    # Token ids for inputs: a transformer (NNCF then keeps its softmax and normalizations in float).
    kind = {"model_type": nncf.ModelType.TRANSFORMER} if any(b.dtype != torch.float32 for b in example) else {}
    start = time.perf_counter()
    models["openvino_int8"] = (nncf.quantize(read, nncf.Dataset(items), subset_size=len(items), **kind), "f32")
    row["openvino_int8_quantize_s"] = round(time.perf_counter() - start, 1)
    if args.accuracy_control:
        from nncf.quantization.advanced_parameters import AdvancedAccuracyRestorerParameters

        def validate(compiled, _data):  # higher is better: 1 - the error (the initial model's is 0)
            return 1.0 - _error(compiled, items, references)
        start = time.perf_counter()
        restored = nncf.quantize_with_accuracy_control(
            read, nncf.Dataset(items), nncf.Dataset(items), validate, max_drop=args.tolerance, subset_size=len(items),
            advanced_accuracy_restorer_parameters=AdvancedAccuracyRestorerParameters(num_ranking_workers=1), **kind)
        row["openvino_int8_ac_quantize_s"] = round(time.perf_counter() - start, 1)
        row["openvino_int8_ac_fake_quantize"] = sum(op.get_type_name() == "FakeQuantize" for op in restored.get_ops())
        models["openvino_int8_ac"] = (restored, "f32")
    return _timed(row, core, models, items, references, runs, args)


def _timed(row, core, models, items, references, runs, args) -> dict:
    """`row` with each OpenVINO model's error and every method's median ms, timed side by side."""
    for method, (m, hint) in models.items():
        compiled = core.compile_model(m, "CPU", {"PERFORMANCE_HINT": "LATENCY", "INFERENCE_PRECISION_HINT": hint})
        row[f"{method}_rel_err"] = _error(compiled, items, references)
        request = compiled.create_infer_request()
        runs[method] = lambda request=request: request.infer(items[0])
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
    lines = [f"`python bench/int8.py {' '.join(sys.argv[1:])}` ({torch.get_num_threads()} threads). Median ms "
             f"(largest error over the example and {args.calibration} calibration inputs against eager float32, "
             "relative to the output's scale); within: the error at or under the tolerance "
             f"{args.tolerance:g}.", "",
             "| model | " + " | ".join(methods) + " | fastest int8 ÷ f32 | ÷ bf16 | int8 within |",
             "|---|" + "---:|" * len(methods) + "---:|---:|---|"]
    for r in rows:
        cells = []
        for m in methods:
            ms, err = r.get(f"{m}_median_ms"), r.get(f"{m}_rel_err")
            cells.append("–" if ms is None else f"{ms:.2f} ({err:.1e})")
        f32, bf16 = r.get("openvino_f32_median_ms"), r.get("openvino_bf16_median_ms")
        kept = [m for m in ("openvino_int8", "onnxruntime_int8") if f"{m}_median_ms" in r]
        int8 = min((r[f"{m}_median_ms"] for m in kept), default=math.nan)
        within = [m.split("_")[0] for m in kept if r[f"{m}_rel_err"] <= args.tolerance]
        lines.append(f"| {r['model']} | " + " | ".join(cells) + f" | {f32 / int8:.2f}× | {bf16 / int8:.2f}× | "
                     f"{', '.join(within) or 'no'} |")
    (args.out / "README.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default=DEFAULT_MODELS)
    parser.add_argument("--unseen", default="", help="torchvision models the zoo lacks (random weights)")
    parser.add_argument("--calibration", type=int, default=8, help="calibration inputs besides the example")
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--tolerance", type=float, default=0.01, help="option tolerance's default")
    parser.add_argument("--accuracy-control", action="store_true")
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "int8-cpu")
    args = parser.parse_args()
    args.unseen = [m for m in args.unseen.split(",") if m]
    rows = []
    for name in [m for m in args.models.split(",") if m] + args.unseen:
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
