#!/usr/bin/env python3
"""Export the model zoo as TorchScript.

    python models/export.py [--out DIR] [--only NAME ...] [--force] [--list] [--threads N]

For each model writes DIR/NAME.pt (torch.jit.trace of the eval-mode module on its example
inputs, saved with torch.jit.save) and DIR/NAME.json:
    {"name": NAME, "inputs": [{"shape": [...], "dtype": "float32"|"int64"[, "low": 0, "high": H]}],
     "outputs": [{"shape": [...], "dtype": ...}], "params": N, "source": "..."}
int64 inputs (token ids) carry the half-open value range [low, high) valid for the embedding.
Models whose .pt and .json both exist are skipped unless --force. Weights are random but
deterministic (see models/registry.py and models/weights.py). Default DIR: models/zoo/.
"""
import argparse
import json
import os
import sys
import time
import warnings
from pathlib import Path
from typing import List, Optional

import torch

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from models import registry  # noqa: E402
else:
    from . import registry

DEFAULT_OUT = Path(__file__).resolve().parent / "zoo"

_DTYPES = {torch.float32: "float32", torch.int64: "int64", torch.float16: "float16",
           torch.bfloat16: "bfloat16", torch.int32: "int32", torch.bool: "bool"}


def _outputs(out) -> List[torch.Tensor]:
    if isinstance(out, torch.Tensor):
        return [out]
    if isinstance(out, (tuple, list)):
        return [t for o in out for t in _outputs(o)]
    raise TypeError(f"unsupported model output type {type(out).__name__}")


def _write_atomic(path: Path, write) -> None:
    """Write via a file of the same name in a scratch folder, then rename: an interrupted export
    never leaves a complete-looking NAME.pt / NAME.json behind (and the TorchScript archive's
    inner folder keeps the model's name)."""
    scratch = path.parent / f".{path.name}.partial"
    scratch.mkdir(exist_ok=True)
    tmp = scratch / path.name
    write(tmp)
    os.replace(tmp, path)
    scratch.rmdir()


def _json_text(meta: dict) -> str:
    """Pretty JSON with one input/output spec per line."""
    items = []
    for k, v in meta.items():
        if isinstance(v, list):
            body = ",\n".join("    " + json.dumps(e) for e in v)
            items.append(f"  {json.dumps(k)}: [\n{body}\n  ]")
        else:
            items.append(f"  {json.dumps(k)}: {json.dumps(v)}")
    return "{\n" + ",\n".join(items) + "\n}\n"


def export_model(name: str, out_dir: Path, force: bool = False) -> Optional[dict]:
    """Export one model; returns its metadata, or None when skipped because it already exists."""
    out_dir = Path(out_dir)
    pt, js = out_dir / f"{name}.pt", out_dir / f"{name}.json"
    if not force and pt.is_file() and js.is_file():
        return None
    out_dir.mkdir(parents=True, exist_ok=True)
    spec = registry.spec(name)
    t0 = time.perf_counter()
    model = registry.build(name)
    inputs = registry.make_inputs(name)
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore", torch.jit.TracerWarning)
        warnings.filterwarnings("ignore", r"`torch\.jit\.\w+` is deprecated", DeprecationWarning)
        ref = _outputs(model(*inputs))
        traced = torch.jit.trace(model, tuple(inputs), check_trace=False)
        got = _outputs(traced(*inputs))
    for r, g in zip(ref, got):
        if not torch.isfinite(r).all():
            raise RuntimeError(f"{name}: eager output is not finite")
        tol = 1e-5 * max(1.0, r.abs().max().item())
        if r.shape != g.shape or (r - g).abs().max().item() > tol:
            raise RuntimeError(f"{name}: traced output differs from eager output")
    meta = {
        "name": name,
        "inputs": [i.to_json() for i in spec.inputs],
        "outputs": [{"shape": list(r.shape), "dtype": _DTYPES.get(r.dtype, str(r.dtype))} for r in ref],
        "params": registry.param_count(model),
        "source": spec.source,
    }
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", r"`torch\.jit\.\w+` is deprecated", DeprecationWarning)
        _write_atomic(pt, lambda p: torch.jit.save(traced, str(p)))
    _write_atomic(js, lambda p: p.write_text(_json_text(meta)))
    meta["seconds"] = time.perf_counter() - t0
    return meta


def main(argv: Optional[List[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT, help=f"output directory (default {DEFAULT_OUT})")
    ap.add_argument("--only", nargs="+", action="extend", metavar="NAME", help="export only these models")
    ap.add_argument("--force", action="store_true", help="re-export even if NAME.pt and NAME.json exist")
    ap.add_argument("--list", action="store_true", help="print the model names and exit")
    ap.add_argument("--threads", type=int, default=1,
                    help="intra-op CPU threads (default 1: exports are light, and OpenMP spinning "
                         "degrades badly when the cores are shared, e.g. with a build)")
    args = ap.parse_args(argv)
    torch.set_num_threads(max(1, args.threads))

    if args.list:
        print("\n".join(registry.NAMES))
        return 0
    names = args.only or list(registry.NAMES)
    unknown = [n for n in names if n not in registry.MODELS]
    if unknown:
        print(f"export.py: unknown model name(s): {', '.join(unknown)}\n"
              f"known models: {', '.join(registry.NAMES)}", file=sys.stderr)
        return 2
    for name in dict.fromkeys(names):
        meta = export_model(name, args.out, args.force)
        if meta is None:
            print(f"{name:<16} skipped (exists in {args.out}; --force to re-export)", flush=True)
        else:
            print(f"{name:<16} params {meta['params'] / 1e6:8.3f}M  {meta['seconds']:6.1f}s  "
                  f"-> {args.out / (name + '.pt')}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
