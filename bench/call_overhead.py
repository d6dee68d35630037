"""What packing the optimized program's small weights saves per call (python/autograph/export/packed_weights.py).

Each model is optimized on the export path with ATen's kernels alone (options inductor, openvino and
onnxruntime off: the plan whose call hands every weight over), as autograph makes it (small weights
packed), and the same program is exported once more with every weight passed on its own; the two
`ExportedProgram.module()` calls are timed alternated, call by call, in one process. Their kernels are the
same, so the difference of the medians is host time: the graph's attribute reads, the operator call's
boxing of each tensor and the program's checks of each.

    python bench/call_overhead.py --models conv_chain_400,nasnet_a_mobile --rounds 200 --out DIR
"""
import argparse
import json
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "python"), str(ROOT / "bench")]

import torch  # noqa: E402

from models import registry  # noqa: E402

OPTIONS = dict(inductor=False, openvino=False, onnxruntime=False)


class ConvChain(torch.nn.Module):
    """`n` 1x1 convolutions with biases (2n small weights) over an 8x4x4 input: kernels that cost little,
    so that the call's host time shows."""

    def __init__(self, n: int):
        super().__init__()
        self.convs = torch.nn.ModuleList(torch.nn.Conv2d(8, 8, 1) for _ in range(n))

    def forward(self, x):
        for c in self.convs:
            x = torch.relu(c(x))
        return x


def model_and_inputs(name: str):
    """A zoo model (models/registry) or "conv_chain_N" (ConvChain(N))."""
    if name.startswith("conv_chain_"):
        return ConvChain(int(name[len("conv_chain_"):])).eval(), (torch.randn(1, 8, 4, 4),)
    return registry.build(name).eval(), tuple(registry.make_inputs(name))


def optimized_pair(ep, inputs):
    """(packed, unpacked): the model optimized as autograph does, and the same program (the same plan)
    exported once more with every weight passed on its own."""
    import autograph
    from autograph.export import optimize as optimize_module
    seen = {}
    real_packed, real_module = optimize_module.packed, optimize_module.ExecuteProgram

    def packed(program, weights):
        seen["program"], seen["weights"] = program, list(weights)
        return real_packed(program, weights)

    def module(program, passed, in_spec, out_spec, extra=()):
        seen["specs"] = (in_spec, out_spec, list(extra))
        return real_module(program, passed, in_spec, out_spec, extra)

    optimize_module.packed, optimize_module.ExecuteProgram = packed, module
    try:
        packed_program, _ = autograph.optimize(ep, **OPTIONS)
    finally:
        optimize_module.packed, optimize_module.ExecuteProgram = real_packed, real_module
    in_spec, out_spec, extra = seen["specs"]
    unpacked = torch.export.export(real_module(seen["program"], seen["weights"], in_spec, out_spec, extra), inputs,
                                   strict=False)
    return packed_program, unpacked


def measure(name: str, rounds: int) -> dict:
    torch.manual_seed(0)
    model, inputs = model_and_inputs(name)
    ep = torch.export.export(model, inputs, strict=False)
    packed, unpacked = optimized_pair(ep, inputs)
    calls = {"packed": packed.module(), "unpacked": unpacked.module()}
    times = {k: [] for k in calls}
    with torch.no_grad():
        outs = {k: f(*inputs) for k, f in calls.items()}
        for _ in range(5):
            for f in calls.values():
                f(*inputs)
        for _ in range(rounds):
            for k, f in calls.items():
                start = time.perf_counter()
                f(*inputs)
                times[k].append(time.perf_counter() - start)
    a, b = (outs[k][0] if isinstance(outs[k], (tuple, list)) else outs[k] for k in ("packed", "unpacked"))
    ms = {k: statistics.median(v) * 1e3 for k, v in times.items()}
    spread = {k: [round(statistics.quantiles(v, n=10)[i] * 1e3, 4) for i in (0, 8)] for k, v in times.items()}
    return {"model": name, "weights": len(unpacked.state_dict), "tensors_packed_call": len(packed.state_dict),
            "packed_ms": round(ms["packed"], 4), "unpacked_ms": round(ms["unpacked"], 4),
            "packed_p10_p90_ms": spread["packed"], "unpacked_p10_p90_ms": spread["unpacked"],
            "saved_ms": round(ms["unpacked"] - ms["packed"], 4), "speedup": round(ms["unpacked"] / ms["packed"], 3),
            "same_output": bool(torch.equal(a, b))}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--models", default="conv_chain_50,conv_chain_400,nasnet_a_mobile,bert_base",
                   help="zoo models, or conv_chain_N (N 1x1 convolutions: 2N small weights, little compute)")
    p.add_argument("--rounds", type=int, default=200)
    p.add_argument("--threads", type=int, default=torch.get_num_threads())
    p.add_argument("--out", type=Path)
    args = p.parse_args()
    torch.set_num_threads(args.threads)
    rows = []
    for name in args.models.split(","):
        rows.append(measure(name, args.rounds))
        print(json.dumps(rows[-1]), flush=True)
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "results.json").write_text(json.dumps({"torch": torch.__version__, "threads": args.threads,
                                                           "rounds": args.rounds, "rows": rows}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
