"""A program with its parts compiled: each part of the graph replaced by one call of its compiled
package (whichever compiler made it: its CompiledPart says how it is called), the package a new weight
input, and the weights no node reads any more dropped."""
import json
from typing import Any, Dict, List, NamedTuple, Optional, Sequence, Tuple

import torch

from .. import cache as part_cache
from .graph import part_costs, topological, values_read


class CompiledPart(NamedTuple):
    """One part compiled: its package's bytes, its input and output value ids in the graph, how a program
    calls it (`op`, the operator that runs it, and `format`, its spec's format), what it computes in
    (below fp32, the runner or the package computes its matmuls and convolutions in that precision) and
    what else its runner reads from its spec (`runner`, e.g. ONNX Runtime's "spinning")."""
    package: bytes
    input_ids: List[int]
    output_ids: List[int]
    op: str
    format: str
    precision: str = "fp32"
    runner: Optional[Dict[str, Any]] = None


def part_spec(made: CompiledPart, values: List[Dict[str, Any]], body: Dict[str, Any], part: Sequence[int],
              device: torch.device) -> str:
    """The spec (JSON) a program passes to the runner of compiled part `made`, cut as `part` of the plan
    `body` whose graph's values are `values`: its format, its package's digest, its device, its outputs'
    shapes, strides and dtypes, its cost, and below fp32 its precision."""
    flops, compute_bound = part_costs(body, part)
    spec = {"format": made.format, "digest": part_cache.sha256_of(made.package), "device": str(device),
            "outputs": [{key: values[v][key] for key in ("shape", "stride", "dtype")} for v in made.output_ids],
            "flops": flops, "compute_bound": compute_bound}
    if made.precision != "fp32":
        spec["precision"] = made.precision
    spec.update(made.runner or {})
    return json.dumps(spec)


def rewrite_with_parts(graph: Dict[str, Any], weight_tensors: List[torch.Tensor], body: Dict[str, Any],
                       parts: Sequence[Sequence[int]], compiled: Sequence[CompiledPart],
                       device: torch.device) -> Tuple[Dict[str, Any], List[torch.Tensor]]:
    """`graph` with each of `parts` replaced by one call of its compiled part's operator (the package a new
    weight input; parts of several compilers may sit side by side) and the weights no node reads any more
    dropped; returns the new graph and its weight tensors. A part's precision other than fp32 goes in its
    spec."""
    values = [dict(v) for v in graph["values"]]
    in_part = {n: k for k, part in enumerate(parts) for n in part}
    replaced: List[Tuple[float, List[Dict[str, Any]]]] = []  # (position, nodes)
    packages: List[Tuple[int, torch.Tensor]] = []  # (value id, bytes)
    for i, node in enumerate(graph["nodes"]):
        if i not in in_part:
            replaced.append((i, [node]))
    for k, (part, made) in enumerate(zip(parts, compiled)):
        spec = part_spec(made, values, body, part, device)
        values.append({"tensor": True, "shape": [len(made.package)], "stride": [1], "dtype": "Byte"})
        package_id = len(values) - 1
        packages.append((package_id, torch.frombuffer(bytearray(made.package), dtype=torch.uint8)))
        values.append({"tensor": False})
        list_id = len(values) - 1
        label = made.op.split("::run_")[-1]
        nodes = [{"op": made.op, "overload": "default", "name": f"{label}_{k}",
                  "args": [{"values": list(made.input_ids)}, {"value": package_id}, {"str": spec}],
                  "kwargs": {}, "outputs": [list_id]}]
        nodes += [{"op": "getitem", "overload": "default", "name": f"{label}_{k}_{j}",
                   "args": [{"value": list_id}, j], "kwargs": {}, "outputs": [v]} for j, v in enumerate(made.output_ids)]
        replaced.append((min(part), nodes))
    ordered = topological([n for _, group in sorted(replaced, key=lambda r: r[0]) for n in group])

    read = set(graph["outputs"])
    for node in ordered:
        read.update(values_read(node))
    inputs, flags, tensors = [], [], []
    weights = iter(weight_tensors)
    for v, is_weight in zip(graph["inputs"], graph["weights"]):
        tensor = next(weights) if is_weight else None
        if is_weight and v not in read:
            continue  # frozen into a package
        if not is_weight and packages:  # packages go after the last weight, before the user's inputs
            for package_id, package in packages:
                inputs.append(package_id)
                flags.append(True)
                tensors.append(package)
            packages = []
        inputs.append(v)
        flags.append(is_weight)
        if is_weight:
            tensors.append(tensor)
    rewritten = dict(graph, values=values, inputs=inputs, weights=flags, nodes=ordered)
    return rewritten, tensors


__all__ = ["CompiledPart", "part_spec", "rewrite_with_parts"]
