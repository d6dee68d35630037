#!/usr/bin/env python3
"""Tables and a chart from a benchmark's results.csv, laid out like the AutoGraph paper's latency table.

Usage: bench/report.py DIR [--baseline jit]

Reads DIR/results.csv (`autograph bench` rows, plus torch_compile_*, onnxruntime, openvino and
autograph_export rows from bench/torch_compile_bench.py; several devices and batch sizes may be mixed)
and, per (device, batch):
  - latency: rows = models, columns = methods (jit, jit_frozen, taso_jit, nimble, taso_nimble, ios,
    autograph, then the others), cells = median ms, `1.234 (2.10×)` = speedup over the baseline,
    the fastest cell of a row in bold, whichever method it is (the rivals' columns included),
    `–` = no row for that method;
  - speedup over the baseline per model and method, and the geometric mean of each method;
  - accuracy: max relative error against the TorchScript module, ⚠ above 1e-3.
Writes DIR/results.md (replacing the one `autograph bench` wrote) and prints it; writes DIR/speedup.svg,
a grouped bar chart of the speedups with one chart per (device, batch) stacked vertically in that one
file. Standard library only: the GPU machine has no matplotlib. A later row for the same (model, batch,
device, method) replaces an earlier one. Exit 2 when the CSV is missing, lacks columns or has bad numbers.
"""
import argparse
import csv
import math
import sys
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple
from xml.sax.saxutils import escape

CSV_FIELDS = ["model", "batch", "device", "method", "median_ms", "p10_ms", "p90_ms", "max_abs_err", "max_rel_err",
              "search_s"]
NUMERIC_FIELDS = CSV_FIELDS[4:]
PAPER_METHODS = ["jit", "jit_frozen", "taso_jit", "nimble", "taso_nimble", "ios", "autograph"]
OUR_EXTRA_METHODS = ["sequential", "greedy"]
REFERENCE_PREFIX = "torch_compile_"
RIVALS = ("onnxruntime", "openvino")  # the tools a user would pick instead (bench/rivals.py)
ACCURACY_LIMIT = 1e-3
EMPTY = "–"
PROG = "report.py"
# Bar colours (Tableau 10): distinguishable, and the same method keeps its colour in every chart.
PALETTE = ["#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1", "#ff9da7", "#9c755f",
           "#bab0ac"]


class ReportError(Exception):
    """A problem with the input that ends the report with exit status 2."""


Key = Tuple[str, int]  # (device, batch)


def load_results(csv_path: Path) -> List[dict]:
    if not csv_path.is_file():
        raise ReportError(f"{csv_path} not found (run `autograph bench ... --out {csv_path.parent}` first)")
    with csv_path.open(newline="") as f:
        reader = csv.DictReader(f)
        missing = [c for c in CSV_FIELDS if c not in (reader.fieldnames or [])]
        if missing:
            raise ReportError(f"{csv_path} lacks column(s) {', '.join(missing)}; expected header "
                              f"{','.join(CSV_FIELDS)}")
        rows = []
        for line_no, raw in enumerate(reader, start=2):
            try:
                row = {"model": raw["model"].strip(), "device": raw["device"].strip(),
                       "method": raw["method"].strip(), "batch": int(raw["batch"])}
                row.update({k: float(raw[k]) for k in NUMERIC_FIELDS})
            except (TypeError, ValueError) as e:
                raise ReportError(f"{csv_path}:{line_no}: bad value ({e})") from None
            rows.append(row)
    if not rows:
        raise ReportError(f"{csv_path} has a header but no rows")
    return rows


def group_results(rows: List[dict]) -> Dict[Key, Dict[str, Dict[str, dict]]]:
    """(device, batch) -> model -> method -> row, in order of first appearance; later duplicates win."""
    groups: Dict[Key, Dict[str, Dict[str, dict]]] = {}
    for row in rows:
        groups.setdefault((row["device"], row["batch"]), {}).setdefault(row["model"], {})[row["method"]] = row
    return groups


def method_order(methods: Sequence[str]) -> List[str]:
    """The paper's columns first, then sequential/greedy, their *_graph variants, unknown methods, and the
    torch.compile references last."""
    base_rank = {m: i for i, m in enumerate(PAPER_METHODS + OUR_EXTRA_METHODS)}
    first_seen = {m: i for i, m in enumerate(dict.fromkeys(methods))}

    def rank(m: str):
        if m in base_rank:
            return (0, base_rank[m], "")
        if m.endswith("_graph") and m[:-len("_graph")] in base_rank:
            return (1, base_rank[m[:-len("_graph")]], "")
        if m.startswith(REFERENCE_PREFIX):
            return (3, first_seen[m], "")
        return (2, first_seen[m], m)

    return sorted(first_seen, key=rank)


def is_reference(method: str) -> bool:
    """Another tool's column (torch.compile, ONNX Runtime, OpenVINO): ordered after autograph's own."""
    return method.startswith(REFERENCE_PREFIX) or method in RIVALS


def speedup(by_method: Dict[str, dict], method: str, baseline: str) -> Optional[float]:
    if method == baseline or method not in by_method or baseline not in by_method:
        return None
    median = by_method[method]["median_ms"]
    return by_method[baseline]["median_ms"] / median if median > 0 else None


def geometric_mean(values: Sequence[float]) -> float:
    return math.exp(sum(math.log(v) for v in values) / len(values))


def table(header: Sequence[str], body: Sequence[Sequence[str]]) -> List[str]:
    lines = ["| " + " | ".join(header) + " |", "|---|" + "---:|" * (len(header) - 1)]
    lines += ["| " + " | ".join(cells) + " |" for cells in body]
    return lines


def group_markdown(key: Key, models: Dict[str, Dict[str, dict]], methods: List[str], baseline: str) -> List[str]:
    device, batch = key
    lines = [f"## {device}, batch {batch}", "", "### Latency", ""]
    body = []
    for model, by_method in models.items():
        fastest = min(row["median_ms"] for row in by_method.values())
        cells = [model]
        for method in methods:
            if method not in by_method:
                cells.append(EMPTY)
                continue
            cell = f"{by_method[method]['median_ms']:.3f}"
            s = speedup(by_method, method, baseline)
            if s is not None:
                cell += f" ({s:.2f}×)"
            if by_method[method]["median_ms"] == fastest:
                cell = f"**{cell}**"
            cells.append(cell)
        body.append(cells)
    lines += table(["model"] + methods, body)
    lines += ["", f"Median ms (batch {batch}, {device}); (n×) = speedup over {baseline}. **Bold**: fastest in the "
                  f"row, whichever tool it is (torch.compile, ONNX Runtime and OpenVINO included).", ""]

    others = [m for m in methods if m != baseline]
    lines += [f"### Speedup over {baseline}", ""]
    body = []
    for model, by_method in models.items():
        cells = [model]
        for method in others:
            s = speedup(by_method, method, baseline)
            cells.append(EMPTY if s is None else f"{s:.2f}×")
        body.append(cells)
    lines += table(["model"] + others, body)
    means = []
    for method in others:
        values = [s for by_method in models.values() if (s := speedup(by_method, method, baseline)) is not None]
        if values:
            means.append(f"{method} {geometric_mean(values):.2f}× ({len(values)} model{'s' * (len(values) != 1)})")
    lines += ["", f"Geometric mean speedup over {baseline}: " + ("; ".join(means) if means else "none") + ".", ""]

    lines += ["### Accuracy", ""]
    body = []
    for model, by_method in models.items():
        cells = [model]
        for method in methods:
            if method not in by_method:
                cells.append(EMPTY)
                continue
            err = by_method[method]["max_rel_err"]
            cell = "0" if err == 0 else f"{err:.1e}"
            cells.append(cell + " ⚠" if not err <= ACCURACY_LIMIT else cell)  # NaN is flagged as well
        body.append(cells)
    lines += table(["model"] + methods, body)
    lines += ["", f"Max relative error (max |out − ref| / max |ref|) against the TorchScript module as loaded; "
                  f"⚠ = above {ACCURACY_LIMIT:g}.", ""]
    return lines


def nice_step(span: float, target_ticks: int = 5) -> float:
    """A 1, 2 or 5 × 10^k tick step giving about target_ticks ticks over span."""
    raw = span / target_ticks
    power = 10 ** math.floor(math.log10(raw))
    return next(m * power for m in (1, 2, 5, 10) if m * power >= raw)


def chart_svg(key: Key, models: Dict[str, Dict[str, dict]], methods: List[str], baseline: str,
              colours: Dict[str, str], top: float) -> Tuple[List[str], float, float]:
    """One grouped bar chart as SVG elements starting at y = top; returns the elements, its width and height."""
    device, batch = key
    bar_w, group_gap, min_plot_w = 14, 24, 380
    left, plot_h = 96, 260  # left: room for the first model's slanted label
    title_h, label_h = 40, 90
    legend_w = 40 + 7.5 * max([len(m) for m in methods] + [8])  # about 7 px per 12 px sans-serif character
    n = max(len(methods), 1)
    # groups spread out to a minimum width, so a chart of one or two models still fits its title
    group_w = max(n * bar_w + group_gap, min_plot_w / max(len(models), 1))
    plot_w = max(len(models), 1) * group_w
    speedups = {(mo, me): s for mo, by_method in models.items() for me in methods
                if (s := speedup(by_method, me, baseline)) is not None}
    y_max = max([1.0] + list(speedups.values())) * 1.1
    step = nice_step(y_max)
    y_max = math.ceil(y_max / step) * step
    plot_top = top + title_h

    def y_of(v: float) -> float:
        return plot_top + plot_h * (1 - v / y_max)

    out = [f'<g class="chart" data-device="{escape(device)}" data-batch="{batch}">',
           f'<text x="{left + plot_w / 2:.1f}" y="{top + 24:.1f}" text-anchor="middle" font-size="15" '
           f'font-weight="bold">Speedup over {escape(baseline)} — {escape(device)}, batch {batch}</text>']
    # y axis: ticks with grid lines, then the axis itself
    tick = 0.0
    while tick <= y_max + step / 2:
        y = y_of(tick)
        out.append(f'<line x1="{left}" y1="{y:.1f}" x2="{left + plot_w}" y2="{y:.1f}" stroke="#e6e6e6"/>')
        out.append(f'<line x1="{left - 5}" y1="{y:.1f}" x2="{left}" y2="{y:.1f}" stroke="#333"/>')
        out.append(f'<text x="{left - 8}" y="{y + 4:.1f}" text-anchor="end" font-size="11">{tick:g}×</text>')
        tick += step
    out.append(f'<line x1="{left}" y1="{plot_top}" x2="{left}" y2="{plot_top + plot_h}" stroke="#333"/>')
    out.append(f'<line x1="{left}" y1="{plot_top + plot_h}" x2="{left + plot_w}" y2="{plot_top + plot_h}" '
               f'stroke="#333"/>')
    out.append(f'<text transform="translate({left - 46},{plot_top + plot_h / 2:.1f}) rotate(-90)" '
               f'text-anchor="middle" font-size="12">speedup over {escape(baseline)}</text>')
    # bars, one per (model, method) that has a speedup; a gap where it has none
    for i, model in enumerate(models):
        x0 = left + i * group_w + (group_w - n * bar_w) / 2
        for j, method in enumerate(methods):
            s = speedups.get((model, method))
            if s is None:
                continue
            y = y_of(s)
            out.append(f'<rect class="bar" x="{x0 + j * bar_w:.1f}" y="{y:.1f}" width="{bar_w - 2}" '
                       f'height="{plot_top + plot_h - y:.1f}" fill="{colours[method]}">'
                       f'<title>{escape(model)} {escape(method)}: {s:.2f}×</title></rect>')
        label_x, label_y = x0 + n * bar_w / 2, plot_top + plot_h + 14
        out.append(f'<text transform="translate({label_x:.1f},{label_y:.1f}) rotate(-35)" text-anchor="end" '
                   f'font-size="11">{escape(model)}</text>')
    # the break-even line, drawn over the bars
    out.append(f'<line class="baseline" x1="{left}" y1="{y_of(1.0):.1f}" x2="{left + plot_w}" y2="{y_of(1.0):.1f}" '
               f'stroke="#000" stroke-dasharray="6,4"/>')
    legend_x = left + plot_w + 24
    for j, method in enumerate(methods):
        y = plot_top + 4 + j * 18
        out.append(f'<rect class="legend-swatch" x="{legend_x}" y="{y}" width="12" height="12" '
                   f'fill="{colours[method]}"/>')
        out.append(f'<text x="{legend_x + 18}" y="{y + 10}" font-size="12">{escape(method)}</text>')
    out.append("</g>")
    width = legend_x + legend_w
    height = title_h + max(plot_h + label_h, len(methods) * 18 + 8)
    return out, width, height


def speedup_svg(groups: Dict[Key, Dict[str, Dict[str, dict]]], methods_by_group: Dict[Key, List[str]],
                baseline: str) -> str:
    all_methods = method_order([m for ms in methods_by_group.values() for m in ms])
    colours = {m: PALETTE[i % len(PALETTE)] for i, m in enumerate(m for m in all_methods if m != baseline)}
    parts, width, top = [], 0.0, 0.0
    for key, models in groups.items():
        charted = [m for m in methods_by_group[key] if m != baseline]
        elements, w, h = chart_svg(key, models, charted, baseline, colours, top)
        parts += elements
        width, top = max(width, w), top + h + 20
    header = (f'<svg xmlns="http://www.w3.org/2000/svg" width="{width:.0f}" height="{top:.0f}" '
              f'viewBox="0 0 {width:.0f} {top:.0f}" font-family="sans-serif">')
    background = '<rect class="background" width="100%" height="100%" fill="#fff"/>'
    return "\n".join([header, background] + parts + ["</svg>"]) + "\n"


def main(argv: Optional[List[str]] = None) -> int:
    ap = argparse.ArgumentParser(prog=PROG, description=__doc__.split("\n\n")[0],
                                 epilog=__doc__.split("\n\n", 1)[1], formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("dir", type=Path, help="directory holding results.csv; results.md and speedup.svg go there")
    ap.add_argument("--baseline", default="jit", help="method the speedups are over (default jit)")
    args = ap.parse_args(argv)
    try:
        rows = load_results(args.dir / "results.csv")
    except ReportError as e:
        print(f"{PROG}: {e}", file=sys.stderr)
        return 2
    groups = group_results(rows)
    methods_by_group = {key: method_order([m for by_method in models.values() for m in by_method])
                        for key, models in groups.items()}
    if not any(args.baseline in ms for ms in methods_by_group.values()):
        print(f"{PROG}: warning: no {args.baseline!r} rows, so no speedups", file=sys.stderr)

    lines = []
    for key, models in groups.items():
        lines += group_markdown(key, models, methods_by_group[key], args.baseline)
    markdown = "\n".join(lines).rstrip("\n") + "\n"
    (args.dir / "results.md").write_text(markdown, encoding="utf-8")
    (args.dir / "speedup.svg").write_text(speedup_svg(groups, methods_by_group, args.baseline), encoding="utf-8")
    sys.stdout.write(markdown)
    return 0


if __name__ == "__main__":
    sys.exit(main())
