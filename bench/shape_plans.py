"""Plans per shape (`shapes`), measured: a BERT-style encoder optimized once with a schedule for each of
a few shapes. At each shape a server sends, it runs against the original (TorchScript, traced) and
against a module optimized for exactly that shape. Resident memory is measured over rounds of all the
shapes.

Usage: python bench/shape_plans.py --out DIR [--device cpu|cuda] [--runs 20] [--layers 4] [--dim 256]
                                    [--ir torchscript|export]
Writes DIR/results.md and DIR/results.json. Median ms of `runs` timed calls after 3 warm-ups, the
modules called in alternation (round-robin). CPU figures are relative; absolute times mean something
only on the GPU.

With --ir export the encoder is exported with dynamic batch (1..8) and length (2..512) and optimized
on the export path (Inductor on, as by default): `shapes` gets a plan of its own at each listed shape,
and the unlisted shapes run the program's package for every shape; the table adds `dynamic`, the
same program optimized without `shapes` (every shape but the example's on that package), and
`exported`, the exported program itself (`ep.module()`: what the user hands autograph); eager is the
nn.Module, whose TransformerEncoder takes PyTorch's fused inference fast path, which export does not
trace.
"""
import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "python"))
import autograph  # noqa: E402

PLANNED = [(1, 16), (1, 128), (8, 64), (8, 512)]
SERVED = [(1, 16), (1, 64), (1, 128), (2, 256), (4, 64), (8, 64), (8, 128), (8, 512)]


class Encoder(torch.nn.Module):
    def __init__(self, vocab: int, dim: int, layers: int):
        super().__init__()
        self.embed = torch.nn.Embedding(vocab, dim)
        self.position = torch.nn.Parameter(torch.randn(512, dim) * 0.02)
        layer = torch.nn.TransformerEncoderLayer(dim, 4, dim * 4, dropout=0.0, batch_first=True)
        self.encoder = torch.nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.head = torch.nn.Linear(dim, 8)

    def forward(self, ids):
        return self.head(self.encoder(self.embed(ids) + self.position[: ids.shape[1]]))


def rss_mb() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4096 / 2**20


def timed(calls, x, runs: int, device: torch.device):
    sync = torch.cuda.synchronize if device.type == "cuda" else (lambda: None)
    times = {name: [] for name in calls}
    with torch.no_grad():
        for _ in range(3):
            for call in calls.values():
                call(x)
        for _ in range(runs):
            for name, call in calls.items():
                sync()
                start = time.perf_counter()
                call(x)
                sync()
                times[name].append((time.perf_counter() - start) * 1e3)
    return {name: statistics.median(t) for name, t in times.items()}


def report_lines(a, device, report: dict, rows: list, memory: list, multi_s: float, dynamic_s) -> list:
    """results.md: the table of every served shape and the memory after each round."""
    export = a.ir == "export"
    baseline_name = "eager" if export else "jit"
    lines = [f"# Plans per shape: BERT-style encoder ({a.layers} layers, dim {a.dim}), {device}, {a.ir} path", "",
             f"Optimized once with `shapes={PLANNED}` (example 2x64) in {multi_s:.1f} s"
             + (f" (without `shapes`: {dynamic_s:.1f} s)" if export else "") + f". Median ms of {a.runs} "
             "runs after 3 warm-ups, round-robin. `exact`: a module optimized for that very shape"
             + ("; `dynamic`: optimized without `shapes`." if export else "."), "",
             f"| shape | planned | {baseline_name} |" + (" exported |" if export else "") + " shapes |"
             + (" dynamic |" if export else "") + " exact | shapes / exact |"
             + (" dynamic / shapes | exported / shapes |" if export else "") + " max rel err |",
             "|---|---|---:|" + ("---:|" if export else "") + "---:|" + ("---:|" if export else "") + "---:|---:|"
             + ("---:|---:|" if export else "") + "---:|"]
    # What runs an unlisted shape on the export path: the graph on ATen's kernels or the package for every
    # shape, whichever measured faster (report["dynamic_shapes"]["other_shapes"]).
    other = {"inductor": "the package for every shape"}.get((report.get("dynamic_shapes") or {}).get("other_shapes"),
                                                            "the graph on ATen's kernels")
    for r in rows:
        planned = "yes" if r["planned"] else (f"no: {other}" if export else "nearest")
        lines.append(f"| {r['shape'][0]}x{r['shape'][1]} | {planned} | {r['jit_ms']:.3f} | "
                     + (f"{r['exported_ms']:.3f} | " if export else "") + f"{r['shapes_ms']:.3f} | "
                     + (f"{r['dynamic_ms']:.3f} | " if export else "")
                     + f"{r['exact_ms']:.3f} | {r['shapes_ms'] / r['exact_ms']:.2f} | "
                     + (f"{r['dynamic_ms'] / r['shapes_ms']:.2f} | {r['exported_ms'] / r['shapes_ms']:.2f} | "
                        if export else "")
                     + f"{r['max_rel_err']:.1e} |")
    lines += ["", "Resident memory (MB) after each round over all shapes: " +
              ", ".join(f"{m:.0f}" for m in memory)]
    return lines


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--device", default="cpu")
    p.add_argument("--runs", type=int, default=20)
    p.add_argument("--layers", type=int, default=4)
    p.add_argument("--dim", type=int, default=256)
    p.add_argument("--ir", choices=("torchscript", "export"), default="torchscript")
    a = p.parse_args()
    device = torch.device(a.device)
    torch.manual_seed(0)
    vocab = 1000
    model = Encoder(vocab, a.dim, a.layers).eval().to(device)
    ids = lambda b, n: torch.randint(0, vocab, (b, n), device=device)  # noqa: E731
    if a.ir == "export":
        dims = ({0: torch.export.Dim("batch", min=1, max=8), 1: torch.export.Dim("length", min=2, max=512)},)
        ep = torch.export.export(model, (ids(2, 64),), dynamic_shapes=dims, strict=False)
        baseline = model
        exported = ep.module()
        start = time.perf_counter()
        dynamic = autograph.optimize(ep, (ids(2, 64),))[0].module()
        dynamic_s = time.perf_counter() - start
    else:
        with torch.no_grad():
            baseline = torch.jit.freeze(torch.jit.trace(model, ids(2, 64)))
    start = time.perf_counter()
    if a.ir == "export":
        optimized, report = autograph.optimize(ep, (ids(2, 64),), shapes=PLANNED)
        multi = optimized.module()
    else:
        multi, report = autograph.optimize(model, (ids(2, 64),), shapes=PLANNED)
    multi_s = time.perf_counter() - start
    rows = []
    for b, n in SERVED:
        x = ids(b, n)
        start = time.perf_counter()
        if a.ir == "export":
            exact = autograph.optimize(torch.export.export(model, (x,), strict=False))[0].module()
        else:
            exact, _ = autograph.optimize(model, (x,))
        exact_s = time.perf_counter() - start
        calls = {"jit": baseline, "shapes": multi, "exact": exact}
        if a.ir == "export":
            calls["dynamic"] = dynamic
            calls["exported"] = exported
        ms = timed(calls, x, a.runs, device)
        with torch.no_grad():
            err = ((multi(x) - model(x)).abs().max() / model(x).abs().max()).item()
        row = {"shape": [b, n], "planned": (b, n) in PLANNED or (b, n) == (2, 64),
               "jit_ms": ms["jit"], "shapes_ms": ms["shapes"], "exact_ms": ms["exact"],
               "exact_optimize_s": exact_s, "max_rel_err": err}
        if a.ir == "export":
            row["dynamic_ms"] = ms["dynamic"]
            row["exported_ms"] = ms["exported"]
        rows.append(row)
        print(f"{b}x{n}: " + ", ".join(f"{k} {v:.3f} ms" for k, v in ms.items()), flush=True)
    memory = []
    with torch.no_grad():
        for _ in range(5):
            for b, n in SERVED:
                multi(ids(b, n))
            memory.append(rss_mb())
    a.out.mkdir(parents=True, exist_ok=True)
    result = {"device": str(device), "torch": torch.__version__, "ir": a.ir, "layers": a.layers, "dim": a.dim,
              "runs": a.runs, "planned": PLANNED, "optimize_with_shapes_s": multi_s,
              "shape_plans": report["shape_plans"], "dynamic_shapes": report.get("dynamic_shapes"), "rows": rows,
              "rss_mb_after_each_round": memory}
    export = a.ir == "export"
    if export:
        result["optimize_without_shapes_s"] = dynamic_s
    (a.out / "results.json").write_text(json.dumps(result, indent=1))
    lines = report_lines(a, device, report, rows, memory, multi_s, dynamic_s if export else None)
    (a.out / "results.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
