"""A profile of a part compiled from its ONNX model (OpenVINO's, ONNX Runtime's), read back to the part's
graph nodes. The compilers name the kernels they run after the ONNX nodes or values they came from
("node_conv2d_9/WithoutBiases", "relu_9_nchwc", "node_MatMul_1/MatMulAddFusion"), and torch.onnx recorded
the graph node each ONNX node came from (onnx_export.fx_names_of): a kernel's name leads back to the
longest ONNX name, or graph node name, it begins with. A kernel named otherwise (a fusion's own name, a
layout reorder) is counted to the node run just before it (at the start, to the first one named)."""
from typing import Dict, Iterable, Mapping, Optional, Sequence, Set, Tuple

from ..parts import PartBuilder
from ..parts.profile import NOT_PROFILED, NodeTimes
from .onnx_export import exported_part

_SEPARATORS = "_/.:"


def node_of(kernel: str, nodes: Set[str], fx_names: Mapping[str, str]) -> Optional[str]:
    """The graph node (a name of `nodes`) a kernel's name leads back to, or None; `fx_names`: the graph
    node of each ONNX node and value name."""
    cut = kernel
    while cut:
        for name in (cut, cut[len("node_"):] if cut.startswith("node_") else None):
            if name in nodes:
                return name
            if name in fx_names and fx_names[name] in nodes:
                return fx_names[name]
        cut = cut[:max(cut.rfind(s) for s in _SEPARATORS)] if any(s in cut for s in _SEPARATORS) else ""
    return None


def attributed(kernels: Iterable[Tuple[Sequence[str], float]], nodes: Set[str],
               fx_names: Mapping[str, str]) -> NodeTimes:
    """The kernels' times (each kernel: the names it answers to — its own, or the original layers it fused
    — and its time, in the order they ran) counted to the graph's nodes (`nodes`: their names; `fx_names`
    as node_of's)."""
    us: Dict[str, float] = {}
    named = total = unnamed_before = 0.0
    last: Optional[str] = None
    for names, t in kernels:
        total += t
        found = [n for n in (node_of(name, nodes, fx_names) for name in names) if n is not None]
        if not found:
            if last is None:
                unnamed_before += t
            else:
                us[last] += t
            continue
        named += t
        for n in found:
            us[n] = us.get(n, 0.0) + t / len(found)
        if last is None and unnamed_before:
            us[found[0]] += unnamed_before
        last = found[-1]
    if not us or total <= 0:
        return NOT_PROFILED
    return NodeTimes(us, named / total)


def part_times(builder: PartBuilder, part: Sequence[int], kernels: Iterable[Tuple[Sequence[str], float]]) -> NodeTimes:
    """The kernels' times of `part` compiled from its ONNX model (as attributed's) counted to its nodes,
    through the names torch.onnx recorded on that model."""
    nodes = {builder.graph["nodes"][i]["name"] for i in part}
    return attributed(kernels, nodes, exported_part(builder, part).fx_names())


__all__ = ["attributed", "node_of", "part_times"]
