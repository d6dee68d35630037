"""bench/gpu_table.py's table: its methods and columns, its rows merged from the steps' files, written and
checked, and the ratios of the summary."""
import csv
import json
from pathlib import Path
from typing import Dict, List, Optional, Tuple

import torch_compile_bench as tcb

PROG = "gpu_table"
# Below float32 (the precision step): the export path with option precision, torch.compile under autocast,
# and the TorchScript path with option precision bf16.
PRECISION_METHODS = {"autograph_export_tf32": "tf32", "autograph_export_bf16": "bf16", "autograph_export_fp16": "fp16",
                     "torch_compile_autocast_bf16": "bf16", "torch_compile_autocast_fp16": "fp16",
                     "autograph_graph_bf16": "bf16"}
METHODS = ["eager", "torch_compile_default", "torch_compile_reduce_overhead", "torch_compile_max_autotune",
           "jit_frozen", "nimble", "autograph_graph", "autograph_export"] + list(PRECISION_METHODS)
CLI_METHODS = ["jit", "jit_frozen", "nimble", "autograph_graph"]  # what `autograph bench` builds (jit: its reference)
COMPILE_MODES = {"torch_compile_default": "default", "torch_compile_reduce_overhead": "reduce-overhead",
                 "torch_compile_max_autotune": "max-autotune"}
ORDER = ["eager", "jit"] + METHODS[1:]  # the CSV's row order per model
# The GPU check's stages, the most valuable rows first, each what one short command on a GPU machine runs
# (scripts/gpu_quick_check.sh --stage N): 1 the core table (the export path against the TorchScript path,
# Nimble and torch.compile's CUDA Graphs), 2 the other torch.compile modes and the rows below float32, 3 the
# rest of the zoo (None: every zoo model not in stage 1).
STAGES = {1: (["resnet50", "bert_base", "nasnet_a_mobile"],
              ["eager", "torch_compile_reduce_overhead", "jit_frozen", "nimble", "autograph_graph", "autograph_export"]),
          2: (["resnet50", "bert_base"], ["eager", "torch_compile_default", "torch_compile_max_autotune"]
              + list(PRECISION_METHODS)),
          3: (None, METHODS)}


def stage_models(stage: int) -> List[str]:
    models, _ = STAGES[stage]
    if models is None:
        from models import registry  # the checkout's root is on sys.path (gpu_table.py)
        models = [m for m in registry.NAMES if m not in STAGES[1][0]]
    return list(models)
EXTRA_FIELDS = ["timed", "warmup", "runs", "tf32_off_max_abs_err", "tf32_off_max_rel_err", "input2_max_abs_err",
                "input2_max_rel_err", "cli_median_ms", "anchor_ms", "kept", "chosen", "precision", "stages", "streams", "cuda_graphs",
                "capture_failures", "note"]
FIELDS = tcb.CSV_FIELDS + EXTRA_FIELDS
CAPTURE_FAILED = "capturing a CUDA Graph failed"


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
        for step in ("main", "retry", "precision", "max_autotune"):
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
    """Atomically: written after every step, a kill while writing leaves the previous version."""
    tmp = path.with_name(path.name + ".tmp")
    with tmp.open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=FIELDS, extrasaction="ignore", lineterminator="\n")
        writer.writeheader()
        for row in rows:
            cells = {k: (f"{v:.6g}" if isinstance(v, float) else v) for k, v in row.items()}
            for k in tcb.CSV_FIELDS[4:]:  # bench/report.py reads these as numbers: nan where unmeasured
                if cells.get(k) in (None, ""):
                    cells[k] = "nan"
            writer.writerow(cells)
    tmp.replace(path)


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
            elif method.startswith("autograph_export") and not (r["kept"] and r["streams"] and r["cuda_graphs"]):
                problems.append(f"{model}: the {method} row lacks kept / streams / cuda_graphs")
            elif method in PRECISION_METHODS and not r["precision"]:
                problems.append(f"{model}: the {method} row does not say what it computed in (precision)")
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
        compiled = [(number(r), m) for m, r in mine.items()
                    if m.startswith("torch_compile_") and m not in PRECISION_METHODS and number(r)]
        best_ms, best = min(compiled) if compiled else (None, "")
        eager_ms, nimble_ms = number(mine.get("eager")), number(mine.get("nimble"))
        eager_err = number(mine.get("eager"), "input2_max_rel_err") or 0.0
        lines += [f"{model}:", f"  {'method':<31}{'median ms':>10}{'x eager':>9}{'x best compile':>16}"
                               f"{'x nimble':>10}  {'2nd-input err':>13}  timed"]
        for method, r in mine.items():
            ms = number(r)
            cells = [f"{(ref / ms):.2f}" if ref and ms else "–" for ref in (eager_ms, best_ms, nimble_ms)]
            err = number(r, "input2_max_rel_err")
            # Below float32 an error is expected: the precision lines below say how large.
            flag = " ⚠" if err is not None and err > max(1e-3, 10 * eager_err) and method not in PRECISION_METHODS else ""
            lines.append(f"  {method:<31}{(f'{ms:.3f}' if ms else '–'):>10}{cells[0]:>9}{cells[1]:>16}{cells[2]:>10}"
                         f"  {(f'{err:.1e}' if err is not None else 'not checked'):>13}{flag}  {r.get('timed', '')}")
        if best:
            lines.append(f"  (best torch.compile mode: {best})")
        lines += _precision_lines(mine)
    return lines


def _precision_lines(mine: Dict[str, dict]) -> List[str]:
    """Per precision below float32: autograph's program at that precision over its float32 one and over
    torch.compile under autocast to the same dtype (speedups: above 1 = faster), with what it kept. The
    float32 program was timed in another step: where both steps timed eager (`anchor_ms` beside the
    precision step's rows), its time is scaled by the ratio of the two eager times, so that a device
    slower in one step than in the other does not pass for a speedup."""
    lines = []
    fp32 = number(mine.get("autograph_export"))
    for precision in ("tf32", "bf16", "fp16"):  # no autocast to TF32: its rival is the float32 table's
        ours, rival = mine.get(f"autograph_export_{precision}"), mine.get(f"torch_compile_autocast_{precision}")
        ms = number(ours)
        if not ms:
            continue
        eager, anchor = number(mine.get("eager")), number(ours, "anchor_ms")
        scaled = fp32 * anchor / eager if fp32 and eager and anchor else fp32
        cells = [f"{ref / ms:.2f}x {name}" for ref, name in ((scaled, "autograph_export"),
                                                             (number(rival), f"torch_compile_autocast_{precision}"))
                 if ref]
        lines.append(f"  autograph_export_{precision}: {', '.join(cells) or 'no ratio'}; kept {ours.get('kept', '?')} "
                     f"computing in {ours.get('precision') or '?'}")
    graph = mine.get("autograph_graph_bf16")
    if number(graph):  # the TorchScript path: its float32 plan timed beside the lowered one at optimize
        lines.append(f"  autograph_graph_bf16: {graph.get('note') or 'no note'}; computing in "
                     f"{graph.get('precision') or '?'}")
    return lines
