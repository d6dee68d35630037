#!/usr/bin/env python3
"""Where an export-path optimize spends its time: wall seconds of its phases (each the sum of its calls),
in one process after every compiler's one-time costs (as bench/export_path.py), with cold compile
caches, beside torch.compile's first call with weight freezing on the same model. The phases overlap
where they run side by side: OpenVINO's conversion runs in a process of its own, so "start_package" is
this process's part of it (the ONNX export) and "PendingPackage.result" the wait for the rest.

Usage: python bench/optimize_phases.py [--models rnntc_sru,bert_base] [--without OPTION] [--no-compile] [--out FILE.json]

--without OPTION: the optimize with that boolean option off (e.g. onnxruntime), to see what its compiler's
steps cost.
"""
import argparse
import functools
import json
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "python"), str(ROOT / "bench")]

import torch  # noqa: E402

import export_path  # noqa: E402
from models import registry  # noqa: E402

# (module, attribute path) of the functions timed: the export path's steps, in the order they run.
PHASES = (
    ("autograph.export.optimize", "functional"),
    ("autograph.export.contest", "compile_before_search"),
    ("autograph.export.compilers.onnx_export", "onnx_of"),
    ("autograph.export.compilers.openvino", "start_package"),
    ("autograph.export.compilers.onnxruntime", "start_package"),
    ("autograph.export.compilers.inductor", "compile_just_in_time"),
    ("autograph.export.plans", "plan"),
    ("autograph.export.compilers.converter_process", "PendingPackage.result"),
    ("autograph.export.contest", "compiled_candidates"),
    ("autograph.export.parts.rewrite", "rewrite_with_parts"),
    ("autograph.export.contest", "Contest._reference"),
    ("autograph.export.contest", "Contest._check"),
    ("autograph.export.contest", "_time_candidates"),
    ("autograph.export.contest", "Contest._mixed"),
    ("autograph.export.compilers.openvino", "node_times"),
    ("autograph.export.compilers.onnxruntime", "node_times"),
    ("autograph.export.compilers.onnx_export", "ExportedPart.fx_names"),
    ("autograph.export.contest", "Contest._packaged_winner"),
    ("autograph.export.compilers.inductor", "_compile_now"),
)


def instrument(spent):
    """Wraps each of PHASES so that its calls add their wall seconds to spent[name]."""
    import importlib
    for module_name, path in PHASES:
        owner = importlib.import_module(module_name)
        *outer, name = path.split(".")
        for part in outer:
            owner = getattr(owner, part)
        original = getattr(owner, name)

        def timed(*args, _original=original, _path=path, **kwargs):
            start = time.perf_counter()
            try:
                return _original(*args, **kwargs)
            finally:
                spent[_path] = round(spent.get(_path, 0.0) + time.perf_counter() - start, 3)

        setattr(owner, name, functools.wraps(original)(timed))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default="rnntc_sru,bert_base")
    parser.add_argument("--no-compile", action="store_true", help="skip torch.compile's time")
    parser.add_argument("--out", help="also write the rows as JSON here")
    parser.add_argument("--without", help="a boolean option switched off in every optimize")
    args = parser.parse_args()
    import autograph
    spent = {}
    instrument(spent)
    export_path.warm_isa_check()
    export_path.warm_compilers()
    rows = []
    for name in args.models.split(","):
        torch.manual_seed(0)
        model = registry.build(name).eval()
        inputs = tuple(registry.make_inputs(name))
        export_path.fresh_compile_caches()
        spent.clear()
        start = time.perf_counter()
        ep = torch.export.export(model, inputs, strict=False)
        exported = time.perf_counter() - start
        _, report = autograph.optimize(ep, **({args.without: False} if args.without else {}))
        row = {"model": name, "without": args.without, "export_s": round(exported, 3), "optimize_s": round(time.perf_counter() - start, 3),
               "phases_s": dict(spent), "kept": report.get("inductor", {}).get("kept"),
               "candidates": report.get("inductor", {}).get("candidates")}
        if not args.no_compile:
            export_path.fresh_compile_caches()
            torch._dynamo.reset()
            start = time.perf_counter()
            with torch._inductor.config.patch(freezing=True), torch.no_grad():
                torch.compile(model)(*inputs)
            row["compile_freezing_s"] = round(time.perf_counter() - start, 3)
            row["ratio"] = round(row["optimize_s"] / row["compile_freezing_s"], 2)
        print(json.dumps(row), flush=True)
        rows.append(row)
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(json.dumps({"torch": torch.__version__, "threads": torch.get_num_threads(),
                                              "cpu": os.uname().machine, "rows": rows}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
