"""The `autograph` command on torch.export programs (.pt2): optimize, inspect and bench.

    autograph optimize model.pt2 -o out.pt2 [--method M] [--device D] [--max-streams N ...] [--aoti PKG.pt2]
                       [--precision bf16 [--tolerance T] [--calibration INPUTS.pt]]
    autograph inspect model.pt2 [--json]
    autograph bench model.pt2 [--optimized out.pt2] [--warmup N] [--runs N] [--json]

The installed `autograph` command sends a command whose model is a .pt2 file here (the C++ CLI reads
TorchScript); `python -m autograph.export_cli` is the same. Example inputs are the ones the program was
exported with (torch.export saves them), or --input-shape / --dtype. Options are autograph.optimize's:
one flag per entry of the option table, as the C++ CLI makes them (--no-inductor, --verify 1), or
--option KEY=VALUE by the table's names. Errors, as the C++ CLI gives them: one line
"autograph: error: ..." on stderr and exit status 2.
"""
import argparse
import json
import logging
import os
import statistics
import sys
import time
import warnings
import zipfile
from typing import Any, Dict, List, Optional, Sequence, Tuple

import torch

from .errors import Error, InputError

COMMANDS = ("optimize", "inspect", "bench")

_DTYPES = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16, "float64": torch.float64,
           "int64": torch.int64, "int32": torch.int32, "bool": torch.bool, "uint8": torch.uint8}


def wants(argv: Sequence[str]) -> bool:
    """Whether `argv` (without the program name) is a command on a .pt2 model."""
    return bool(argv) and argv[0] in COMMANDS and any(a.endswith(".pt2") for a in argv[1:] if not a.startswith("-"))


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="autograph", description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="command", required=True)

    def inputs(cmd):
        cmd.add_argument("--input-shape", action="append", default=[],
                         help="an input's shape, e.g. 1,3,224,224 (once per input; default: the export's example inputs)")
        cmd.add_argument("--dtype", action="append", default=[], help="dtype per --input-shape (default float32)")
        cmd.add_argument("--device", default=None, help="device to plan and run on (default: the inputs')")

    o = sub.add_parser("optimize", help="plan a schedule and write the optimized program (.pt2)")
    o.add_argument("model")
    o.add_argument("-o", "--output", required=True, help="the optimized ExportedProgram (torch.export.save)")
    _option_flags(o)
    o.add_argument("--option", action="append", default=[], metavar="KEY=VALUE",
                   help="an autograph.optimize option (value as JSON: true, 3, 0.5, \"text\")")
    o.add_argument("--aoti", default=None, metavar="PKG.pt2",
                   help="also write an AOTInductor package of the optimized program (for C++: AOTIModelPackageLoader)")
    o.add_argument("--json", action="store_true", help="the report as one JSON object on stdout")
    o.add_argument("--calibration", default=None, metavar="INPUTS.pt",
                   help="more inputs on which a candidate below float32 must meet option tolerance: a list of input "
                        "tuples saved by torch.save([(x1,), (x2,)], INPUTS.pt)")
    inputs(o)

    i = sub.add_parser("inspect", help="what a .pt2 program holds: operators, or autograph's plan if optimized")
    i.add_argument("model")
    i.add_argument("--json", action="store_true")

    b = sub.add_parser("bench", help="latency of the program, optimized and not, side by side")
    b.add_argument("model")
    b.add_argument("--optimized", default=None, help="the optimized .pt2 (default: optimize the model now)")
    b.add_argument("--warmup", type=int, default=5)
    b.add_argument("--runs", type=int, default=30)
    b.add_argument("--json", action="store_true")
    inputs(b)
    return p


def _load(path: str) -> torch.export.ExportedProgram:
    from . import export as _export  # registers autograph::execute's fake kernel
    _export.register_fake()
    if not os.path.isfile(path):
        raise InputError(f"cannot open '{path}': " + ("it is a directory" if os.path.isdir(path) else "no such file"))
    quiet = logging.getLogger("torch.export")  # it logs a traceback before raising on a file it cannot read
    level = quiet.level
    quiet.setLevel(logging.CRITICAL)
    try:
        return torch.export.load(path)
    except Exception as e:  # noqa: BLE001 - what torch.export.load says is the message
        if _is_aoti_package(path):
            raise InputError(f"'{path}' is an AOTInductor package (compiled code: run it with AOTIModelPackageLoader "
                             "or torch._inductor.aoti_load_package), not a torch.export program; give the program "
                             "it was compiled from") from None
        raise InputError(f"'{path}' is not a torch.export program saved with torch.export.save "
                         f"({str(e).splitlines()[0] if str(e) else type(e).__name__})") from None
    finally:
        quiet.setLevel(level)


def _is_aoti_package(path: str) -> bool:
    try:
        with zipfile.ZipFile(path) as z:
            return any("/data/aotinductor/" in name for name in z.namelist())
    except (zipfile.BadZipFile, OSError):
        return False


_TYPES = {"int": int, "float": float, "str": str}


def _option_flags(cmd: argparse.ArgumentParser) -> None:
    """One flag per optimize option of the table (device: the inputs' --device), values in args.options."""
    from .settings import option_table
    for o in option_table():
        if o["name"] == "device":
            continue
        flag = "--" + o["name"].replace("_", "-")
        default = o.get("default_note") or json.dumps(o["default"])
        help_text = f"{o['help']} [{o['applies']}; default {default}]".replace("%", "%%")
        if o["type"] == "bool":
            cmd.add_argument(flag, dest=f"option:{o['name']}", action=argparse.BooleanOptionalAction, default=None,
                             help=help_text)
        else:
            cmd.add_argument(flag, dest=f"option:{o['name']}", type=_TYPES[o["type"]], default=None,
                             metavar=o["type"].upper(), help=help_text)


def _flag_options(args) -> Dict[str, Any]:
    return {k.split(":", 1)[1]: v for k, v in vars(args).items() if k.startswith("option:") and v is not None}


def _example_inputs(ep, args) -> Tuple[Tuple[Any, ...], Dict[str, Any]]:
    if args.input_shape:
        if args.dtype and len(args.dtype) != len(args.input_shape):
            raise InputError("give one --dtype per --input-shape, or none (float32)")
        tensors = []
        for k, shape in enumerate(args.input_shape):
            try:
                dims = [int(d) for d in shape.split(",")]
            except ValueError:
                raise InputError(f"bad input shape '{shape}': expected integers separated by commas, e.g. 1,3,224,224") from None
            dtype = _DTYPES.get(args.dtype[k] if args.dtype else "float32")
            if dtype is None:
                raise InputError(f"unknown dtype '{args.dtype[k]}': use one of {', '.join(_DTYPES)}")
            tensors.append(torch.randn(dims).to(dtype) if dtype.is_floating_point else torch.zeros(dims, dtype=dtype))
        return tuple(tensors), {}
    if not ep.example_inputs:
        raise InputError("the program carries no example inputs; give them: --input-shape 1,3,224,224 [--dtype float32]")
    return ep.example_inputs


def _options(pairs: List[str]) -> Dict[str, Any]:
    options = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise InputError(f"--option {pair!r}: expected KEY=VALUE, e.g. --option verify=1")
        try:
            options[key] = json.loads(value)
        except json.JSONDecodeError:
            options[key] = value  # a bare word: a string (--option cost=analytical)
    return options


def _calibration(path: str) -> Any:
    """The calibration inputs saved at `path` (torch.save of a list of input tuples), read without running
    any code of the file's (weights_only); optimize checks their structure."""
    try:
        return torch.load(path, weights_only=True)
    except FileNotFoundError:
        raise InputError(f"--calibration {path}: no such file") from None
    except Exception as e:  # noqa: BLE001 - one clear error, whatever the file holds
        raise InputError(f"--calibration {path}: not a file of input tuples ({type(e).__name__}: "
                         f"{str(e).splitlines()[0] if str(e) else ''}); write one with "
                         "torch.save([(x1,), (x2,)], path)") from None


def _optimize(args) -> int:
    from .api import optimize
    ep = _load(args.model)
    inputs, kwargs = _example_inputs(ep, args)
    if kwargs:
        raise InputError("the program takes keyword inputs; optimize it from Python: autograph.optimize(ep)")
    options = dict(_options(args.option), **_flag_options(args))
    if args.calibration is not None:
        options["calibration"] = _calibration(args.calibration)
    start = time.perf_counter()
    optimized, report = optimize(ep, inputs, device=args.device, **options)
    report["optimize_s"] = round(time.perf_counter() - start, 3)
    torch.export.save(optimized, args.output)
    if args.aoti:
        from .export.compilers.toolchain import aoti_configs, compile_package
        # (not frozen: the package keeps the program's weights as its constants, as a user's would)
        report["aoti_package"] = compile_package(optimized, args.aoti, aoti_configs(freezing=False))
    report.pop("timeline", None)
    if args.json:
        print(json.dumps(report))
    else:
        kept = (report.get("contest") or {}).get("kept", "aten")
        precision = (report.get("contest") or {}).get("precision")
        if precision:
            kept += f" in {precision['kept']} (asked {precision['asked']}, tolerance {precision['tolerance']:g})"
        print(f"{args.model}: {report['operators_before']} operators -> {report['stages']} stages on "
              f"{report['streams']} streams, kernels: {kept} ({report['method']}, {report['device']}); "
              f"optimized in {report['optimize_s']:.1f} s; wrote {args.output}"
              + (f" and {args.aoti}" if args.aoti else ""))
    return 0


def describe(ep: torch.export.ExportedProgram) -> Dict[str, Any]:
    """What `inspect` prints: autograph's plan for an optimized program, else the operators it calls."""
    calls = [n for n in ep.graph.nodes if n.op == "call_function"]
    executes = [n for n in calls if n.target == torch.ops.autograph.execute.default]
    info: Dict[str, Any] = {"optimized": bool(executes), "inputs": len(ep.graph_signature.user_inputs),
                            "outputs": len(ep.graph_signature.user_outputs),
                            "weight_bytes": sum(t.numel() * t.element_size() for t in ep.state_dict.values()
                                                if isinstance(t, torch.Tensor))}
    if not executes:
        counts: Dict[str, int] = {}
        for n in calls:
            counts[str(n.target)] = counts.get(str(n.target), 0) + 1
        info["operators"] = sum(counts.values())
        info["by_operator"] = dict(sorted(counts.items(), key=lambda kv: -kv[1]))
        return info
    from .export.program_format import body_of, header_of
    text = executes[0].args[1]
    header, body = header_of(text), body_of(text)
    stages = body["schedule"]["stages"]
    nodes = body["graph"]["nodes"]
    parts = [n for n in nodes if n["op"] == "autograph::run_inductor_part"]
    compiled: Dict[str, int] = {}  # every compiler's parts, by compiler (run_<compiler>_part)
    for n in nodes:
        if n["op"].startswith("autograph::run_") and n["op"].endswith("_part"):
            name = n["op"][len("autograph::run_"):-len("_part")]
            compiled[name] = compiled.get(name, 0) + 1
    info.update({"format": header["format"], "version": header["version"], "device": header["device"],
                 "stages": len(stages), "groups": sum(len(s["groups"]) for s in stages),
                 "streams": max((len(s["groups"]) for s in stages), default=0),
                 "operators": len(body["operators"]), "aten_nodes": len(nodes), "inductor_parts": len(parts),
                 "inductor_part_bytes": sum(body["graph"]["values"][p["args"][1]["value"]]["shape"][0] for p in parts),
                 "compiled_parts": compiled})
    other = body.get("other_shapes")
    info["dynamic"] = other is not None
    if other is not None:
        planned = body["graph"]
        info["planned_for"] = [planned["values"][v]["shape"] for v, w in zip(planned["inputs"], planned["weights"]) if not w]
        info["other_shapes"] = "inductor" if "run" in other else "aten"
        info["shape_plans"] = []
        for entry in body.get("shape_plans", []):  # plans for further shapes: programs of their own
            plan = body_of(entry["program"])
            graph, plan_stages = plan["graph"], plan["schedule"]["stages"]
            info["shape_plans"].append({
                "shapes": [graph["values"][v]["shape"] for v, w in zip(graph["inputs"], graph["weights"]) if not w],
                "stages": len(plan_stages), "streams": max((len(s["groups"]) for s in plan_stages), default=0),
                "inductor_parts": sum(n["op"] == "autograph::run_inductor_part" for n in graph["nodes"])})
    return info


def _inspect(args) -> int:
    info = describe(_load(args.model))
    if args.json:
        print(json.dumps(info))
        return 0
    if info["optimized"]:
        print(f"{args.model}: optimized by autograph ({info['format']} v{info['version']}, {info['device']}): "
              f"{info['operators']} operators in {info['stages']} stages, {info['groups']} groups, up to "
              f"{info['streams']} streams; {info['inductor_parts']} Inductor-compiled parts "
              f"({info['inductor_part_bytes'] / 2**20:.1f} MiB)"
              + "".join(f", {n} {name} parts" for name, n in sorted(info["compiled_parts"].items()) if name != "inductor")
              + f"; {info['inputs']} inputs, {info['outputs']} outputs")
        if info["dynamic"]:
            runs = ("one Inductor package for every shape" if info["other_shapes"] == "inductor"
                    else "the exported graph on ATen's kernels")
            print(f"{args.model}: dynamic shapes: planned for {info['planned_for']}; other shapes run {runs}")
            for plan in info["shape_plans"]:
                print(f"{args.model}: a plan for {plan['shapes']}: {plan['stages']} stages, up to {plan['streams']} "
                      f"streams, {plan['inductor_parts']} Inductor-compiled parts")
    else:
        top = ", ".join(f"{k} ×{v}" for k, v in list(info["by_operator"].items())[:8])
        print(f"{args.model}: not optimized; {info['operators']} operator calls ({top}); "
              f"{info['inputs']} inputs, {info['outputs']} outputs, weights {info['weight_bytes'] / 2**20:.1f} MiB")
    return 0


def _bench(args) -> int:
    from .api import optimize
    ep = _load(args.model)
    inputs, kwargs = _example_inputs(ep, args)
    device = torch.device(args.device) if args.device else None
    if device is not None:
        inputs = tuple(t.to(device) if isinstance(t, torch.Tensor) else t for t in inputs)
    if args.optimized:
        optimized = _load(args.optimized)
    else:
        optimized, _ = optimize(ep, inputs, **({"device": str(device)} if device else {}))
    from .export.timing import percentile, samples_side_by_side
    runs = {"exported": ep.module(), "autograph": optimized.module()}
    on = next((t.device for t in inputs if isinstance(t, torch.Tensor)), torch.device("cpu"))
    # The policy optimize decides by (export/timing.py), every call timed to the end: no racing.
    samples = samples_side_by_side({name: (lambda run=run: run(*inputs, **kwargs)) for name, run in runs.items()},
                                   on, args.runs, warmup=args.warmup)
    result = {name: {"median_ms": statistics.median(xs), "p10_ms": percentile(xs, 0.1), "p90_ms": percentile(xs, 0.9)}
              for name, xs in samples.items()}
    result["speedup"] = result["exported"]["median_ms"] / result["autograph"]["median_ms"]
    if args.json:
        print(json.dumps(result))
    else:
        for name in runs:
            r = result[name]
            print(f"{name:10s} median {r['median_ms']:.3f} ms (p10 {r['p10_ms']:.3f}, p90 {r['p90_ms']:.3f})")
        print(f"speedup {result['speedup']:.2f}x ({args.runs} runs each, alternated)")
    return 0


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = _parser().parse_args(argv)
    # torch's own deprecation and packaging notices are not the user's business on a command line; the
    # filters last for the command alone (a caller's own filters are as they were after it)
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", category=FutureWarning, module=r"torch(\.|$)")
        warnings.filterwarnings("ignore", category=UserWarning, module=r"torch(\.|$)")
        try:
            return {"optimize": _optimize, "inspect": _inspect, "bench": _bench}[args.command](args)
        except Error as e:  # InputError, UnsupportedModelError: what, where, what to do
            print(f"autograph: error: {e}", file=sys.stderr)
            return 2


if __name__ == "__main__":
    sys.exit(main())
