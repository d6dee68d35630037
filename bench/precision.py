#!/usr/bin/env python3
"""autograph's option precision against the rivals at the same precision, model by model, side by side.

    python bench/precision.py [--models a,b] [--unseen c,d] [--trained e,f] [--repeats N] [--out DIR]
                              [--tolerance T] [--torchscript] [--calibration N]

For each zoo model on this machine's CPU: eager float32 (the reference every error is measured against,
relative to the output's scale); autograph's export path at its default (fp32) and with precision="bf16"
(option tolerance as given, the default otherwise); OpenVINO at f32, with its own defaults (on a CPU with
bf16 units its default inference precision is bf16) and with the bf16 hint; torch.compile with freezing
under CPU autocast to bfloat16; ONNX Runtime's CPU provider at f32 and on the model converted to float16
(its reduced-precision float path: it has no bf16 one; onnxruntime.transformers.float16, inputs and
outputs kept float32). All timed in alternation (autograph.export.timing: warm-up, then each method once
per round), median ms. Writes DIR/results.csv and DIR/README.md. Long: a benchmark, never a timed test. --unseen adds models
the zoo lacks (bench/unseen_models.py: architectures by name, else torchvision's; random weights, batch 1),
as a user would try them. --trained adds models with trained weights and realistic inputs
(bench/trained_models.py): autograph's optimize gets --calibration of their other inputs as calibration
inputs, and its programs are judged again on the inputs left over, which the optimize never saw
("fresh" error: the largest over them). --torchscript adds
autograph's TorchScript path at fp32 and bf16 (a table of its own below the first).
"""
import argparse
import csv
import math
import statistics
import sys
import tempfile
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "python"), str(ROOT / "bench")]
import autograph  # noqa: E402
import rivals  # noqa: E402  (bench/rivals.py)
from autograph.export.timing import samples_side_by_side  # noqa: E402
from export_path import rel_err  # noqa: E402
from models import registry  # noqa: E402
import trained_models  # noqa: E402  (bench/trained_models.py)
from unseen_models import build as _unseen  # noqa: E402  (bench/unseen_models.py)

DEFAULT_MODELS = "squeezenet,resnet50,inception_v3,resnext50_32x4d,nasnet_a_mobile,rnntc_sru,bert_base,randwire"
METHODS = ("eager", "autograph_fp32", "autograph_bf16", "openvino_f32", "openvino_default", "openvino_bf16",
           "compile_autocast_bf16", "onnxruntime_f32", "onnxruntime_fp16")
# The rivals computing below float32, for the ratio against the best of them (their errors in the table).
REDUCED_RIVALS = ("openvino_default", "openvino_bf16", "compile_autocast_bf16", "onnxruntime_fp16")


def _autograph(model, inputs, row, key, fresh=(), **options):
    """autograph's program for `model` (`options` as given) as a call on `inputs`; its error on each of the
    `fresh` (inputs, float32 outputs) pairs, the largest, into row[key + "_fresh_rel_err"]."""
    start = time.perf_counter()
    optimized, report = autograph.optimize(torch.export.export(model, inputs, strict=False), inputs, **options)
    row[f"{key}_optimize_s"] = round(time.perf_counter() - start, 2)
    contest = report.get("inductor") or {}
    row[f"{key}_kept"] = contest.get("kept", "aten")
    if "precision" in contest:
        row[f"{key}_lowered"] = ",".join(contest["precision"]["lowered"]) or "-"
        row[f"{key}_met"] = ",".join(contest["precision"]["met"]) or "-"
    listed = contest.get("candidates", {}).get(row[f"{key}_kept"], {}).get("parts_precision")
    if listed:  # lowered part by part: how many parts compute in bf16
        row[f"{key}_kept"] += f" ({sum(p['precision'] != 'fp32' for p in listed)}/{len(listed)} parts bf16)"
    module = optimized.module()
    if fresh:
        with torch.no_grad():
            row[f"{key}_fresh_rel_err"] = max(rel_err(module(*x), want) for x, want in fresh)
    return lambda: module(*inputs)


def _torchscript(model, inputs, row, key, **options):
    """autograph's TorchScript path (a traced module), its precision decision in the row."""
    start = time.perf_counter()
    optimized, report = autograph.optimize(model, inputs, ir="torchscript", **options)
    row[f"{key}_optimize_s"] = round(time.perf_counter() - start, 2)
    decision = report.get("precision") or {}
    row[f"{key}_kept"] = f"{decision.get('kept', 'fp32')} ({report.get('ops_lowered', 0)} ops lowered)"
    return lambda: optimized(*inputs)


def _compile_autocast(model, inputs):
    import torch._inductor.config as inductor_config
    with inductor_config.patch(freezing=True):
        compiled = torch.compile(model)

        def run():
            with torch.autocast("cpu", dtype=torch.bfloat16):
                return compiled(*inputs)
        with torch.no_grad():
            run()
    return run


def _onnx_rivals(model, inputs, workdir):
    """OpenVINO at f32, its default and bf16; ONNX Runtime at f32 and on the float16 model."""
    import onnx
    from onnxruntime.transformers.float16 import convert_float_to_float16
    path = Path(workdir) / "model.onnx"
    rivals.export_onnx(model, inputs, path)
    runs = {f"openvino_{name}": rivals.openvino_runner(path, inputs, precision)[0]
            for name, precision in (("f32", "f32"), ("default", None), ("bf16", "bf16"))}
    runs["onnxruntime_f32"] = rivals.onnxruntime_runner(path, inputs)[0]
    half = Path(workdir) / "model_fp16.onnx"
    onnx.save(convert_float_to_float16(onnx.load(str(path)), keep_io_types=True), str(half))
    runs["onnxruntime_fp16"] = rivals.onnxruntime_runner(half, inputs)[0]
    return runs


def measure(name: str, args) -> dict:
    torch.manual_seed(0)
    calibration, fresh = [], []
    if name in args.trained:
        model, inputs, more = trained_models.build(name, 1 + args.calibration + args.fresh)
        calibration, fresh = more[:args.calibration], more[args.calibration:]
    elif name in args.unseen:
        model, inputs = _unseen(name)
    else:
        model = registry.build(name)
        inputs = tuple(registry.make_inputs(name))
    with torch.no_grad():
        want = model(*inputs)
        fresh = [(x, model(*x)) for x in fresh]
    row = {"model": name}
    runs = {"eager": lambda: model(*inputs)}
    tolerance = {} if args.tolerance is None else {"tolerance": args.tolerance}
    given = {"calibration": calibration} if calibration else {}
    for key, options in (("autograph_fp32", {}), ("autograph_bf16", dict(precision="bf16", **tolerance, **given))):
        try:
            runs[key] = _autograph(model, inputs, row, key, fresh, **options)
        except Exception as e:  # noqa: BLE001 - the row says what failed
            row[f"{key}_error"] = str(e).splitlines()[0][:200]
    if args.torchscript:
        for key, options in (("torchscript_fp32", {}), ("torchscript_bf16", dict(precision="bf16", **tolerance))):
            try:
                runs[key] = _torchscript(model, inputs, row, key, **options)
            except Exception as e:  # noqa: BLE001 - the row says what failed
                row[f"{key}_error"] = str(e).splitlines()[0][:200]
    try:
        with tempfile.TemporaryDirectory() as workdir:
            runs.update(_onnx_rivals(model, inputs, workdir))
    except Exception as e:  # noqa: BLE001 - as above
        row["onnx_rivals_error"] = str(e).splitlines()[0][:200]
    try:
        runs["compile_autocast_bf16"] = _compile_autocast(model, inputs)
    except Exception as e:  # noqa: BLE001 - as above
        row["compile_autocast_bf16_error"] = str(e).splitlines()[0][:200]
    with torch.no_grad():
        for method, run in runs.items():
            row[f"{method}_rel_err"] = rel_err(run(), want)
        samples = samples_side_by_side(runs, torch.device("cpu"), args.repeats, warmup=3)
    for method, xs in samples.items():
        row[f"{method}_median_ms"] = statistics.median(xs)
    return row


def _ratio(row, over, under):
    a, b = row.get(f"{over}_median_ms"), row.get(f"{under}_median_ms")
    return a / b if a and b else math.nan


def write(rows, args) -> None:
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    fields = sorted({k for r in rows for k in r}, key=lambda k: (k != "model", k))
    with open(out / "results.csv", "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=fields)
        writer.writeheader()
        writer.writerows(rows)
    head = ("| model | " + " | ".join(METHODS)
            + " | kept (bf16) | bf16 ÷ fp32 | vs OpenVINO default | vs best bf16/fp16 rival |")
    lines = [head, "|---|" + "---:|" * len(METHODS) + "---|---:|---:|---:|"]
    speedups = {"fp32": [], "default": [], "rival": []}
    for r in rows:
        cells = []
        for m in METHODS:
            ms, err = r.get(f"{m}_median_ms"), r.get(f"{m}_rel_err")
            cells.append(f"{ms:.2f} ({err:.1e})" if ms else "—")
        best_rival = min((r[f"{m}_median_ms"] for m in REDUCED_RIVALS if f"{m}_median_ms" in r), default=None)
        ratios = (_ratio(r, "autograph_fp32", "autograph_bf16"), _ratio(r, "openvino_default", "autograph_bf16"),
                  best_rival / r["autograph_bf16_median_ms"] if best_rival and "autograph_bf16_median_ms" in r
                  else math.nan)
        for key, value in zip(speedups, ratios):
            if value == value:
                speedups[key].append(value)
        lines.append(f"| {r['model']} | " + " | ".join(cells) + f" | {r.get('autograph_bf16_kept', '—')} | "
                     + " | ".join(f"{x:.2f}×" for x in ratios) + " |")
    geo = {k: math.exp(sum(map(math.log, v)) / len(v)) if v else math.nan for k, v in speedups.items()}
    lines.append(f"\nGeometric means: bf16 ÷ fp32 {geo['fp32']:.2f}×, vs OpenVINO's defaults {geo['default']:.2f}×, "
                 f"vs the best bf16/fp16 rival {geo['rival']:.2f}×.")
    fresh = [r for r in rows if "autograph_bf16_fresh_rel_err" in r]
    if fresh:
        lines += ["", "Models with trained weights: autograph's errors on the inputs its optimize never saw (the "
                  "largest over them) beside the error on the example it was optimized with:", "",
                  "| model | fp32: example / fresh | bf16: example / fresh | kept (bf16) |", "|---|---:|---:|---|"]
        for r in fresh:
            cells = [f"{r.get(f'{k}_rel_err', math.nan):.1e} / {r.get(f'{k}_fresh_rel_err', math.nan):.1e}"
                     for k in ("autograph_fp32", "autograph_bf16")]
            lines.append(f"| {r['model']} | " + " | ".join(cells) + f" | {r.get('autograph_bf16_kept', '—')} |")
    if any("torchscript_bf16_median_ms" in r for r in rows):
        lines += ["", "The TorchScript path (`ir=\"torchscript\"`):", "",
                  "| model | torchscript_fp32 | torchscript_bf16 | kept (bf16) | bf16 ÷ fp32 |", "|---|---:|---:|---|---:|"]
        ts = []
        for r in rows:
            cells = [f"{r[f'{m}_median_ms']:.2f} ({r[f'{m}_rel_err']:.1e})" if f"{m}_median_ms" in r else "—"
                     for m in ("torchscript_fp32", "torchscript_bf16")]
            ratio = _ratio(r, "torchscript_fp32", "torchscript_bf16")
            if ratio == ratio:
                ts.append(ratio)
            lines.append(f"| {r['model']} | " + " | ".join(cells) + f" | {r.get('torchscript_bf16_kept', '—')} | "
                         f"{ratio:.2f}× |")
        if ts:
            lines.append(f"\nGeometric mean, TorchScript path bf16 ÷ fp32: {math.exp(sum(map(math.log, ts)) / len(ts)):.2f}×.")
    (out / "README.md").write_text(
        f"`python bench/precision.py --models {args.models} --repeats {args.repeats}"
        + (f" --unseen {','.join(args.unseen)}" if args.unseen else "")
        + (f" --trained {','.join(args.trained)} --calibration {args.calibration} --fresh {args.fresh}"
           if args.trained else "")
        + (f" --tolerance {args.tolerance}" if args.tolerance is not None else "")
        + (" --torchscript" if args.torchscript else "")
        + f"` ({torch.get_num_threads()} threads, torch {torch.__version__}). Median ms (error against float32 "
          "eager, relative to the output's scale); ratios: the other's time ÷ autograph bf16's.\n\n"
        + "\n".join(lines) + "\n")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default=DEFAULT_MODELS)
    parser.add_argument("--repeats", type=int, default=10)
    parser.add_argument("--tolerance", type=float, default=None)
    parser.add_argument("--unseen", default="", help="models the zoo lacks (bench/unseen_models.py), e.g. googlenet,efficientnet_b0,lstm_tagger")
    parser.add_argument("--trained", default="", help="models with trained weights (bench/trained_models.py): "
                        + ", ".join(trained_models.MODELS))
    parser.add_argument("--calibration", type=int, default=3, help="--trained: calibration inputs given to optimize")
    parser.add_argument("--fresh", type=int, default=4, help="--trained: inputs the optimize never saw, judged after")
    parser.add_argument("--torchscript", action="store_true", help="also autograph's TorchScript path, fp32 and bf16")
    parser.add_argument("--out", default="bench/results/precision-cpu")
    args = parser.parse_args()
    args.unseen = [n for n in args.unseen.split(",") if n]
    args.trained = [n for n in args.trained.split(",") if n]
    rows = []
    for name in [n for n in args.models.split(",") if n] + args.unseen + args.trained:
        rows.append(measure(name, args))
        print({k: v for k, v in rows[-1].items() if "median" in k or "err" in k or "kept" in k}, flush=True)
    write(rows, args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
