"""A profile of a part compiled from its ONNX model (OpenVINO's, ONNX Runtime's), read back to the part's
graph nodes. The compilers name the kernels they run after the ONNX nodes or values they came from
("node_conv2d_9/WithoutBiases", "relu_9_nchwc", "node_MatMul_1/MatMulAddFusion"), and torch.onnx recorded
the graph node each ONNX node came from (onnx_export.fx_names_of): a kernel's name leads back to the
longest ONNX name, or graph node name, it begins with. A kernel named otherwise (a fusion's own name, a
layout reorder) is counted to the node run just before it (at the start, to the first one named). A node
no kernel leads back to, read by one node only, was fused into the kernel of that node: ONNX Runtime names
a convolution fused with its activation after the activation's output ("relu_1_nchwc"), and the
convolution shares that kernel's time (counted to the activation alone, a cut between the two would find
the convolution free and the activation costly)."""
from typing import Dict, Iterable, List, Mapping, Optional, Sequence, Set, Tuple

from ..parts import PartBuilder, values_read
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
               fx_names: Mapping[str, str], read_from: Optional[Mapping[str, Sequence[str]]] = None) -> NodeTimes:
    """The kernels' times (each kernel: the names it answers to — its own, or the original layers it fused
    — and its time, in the order they ran) counted to the graph's nodes (`nodes`: their names; `fx_names`
    as node_of's), shared evenly by the nodes a kernel answers to and those fused into it (`read_from`:
    each node's producers in the graph, read by it alone: fused_into); those of a kernel of several nodes
    are NodeTimes.fused."""
    kernels = [(names, t, [n for n in (node_of(name, nodes, fx_names) for name in names) if n is not None])
               for names, t in kernels]
    fused = fused_into({n for _, _, found in kernels for n in found}, read_from or {})
    us: Dict[str, float] = {}
    together: Dict[Tuple[str, ...], None] = {}
    named = total = unnamed_before = 0.0
    last: Optional[str] = None
    for _, t, own in kernels:
        total += t
        found = list(dict.fromkeys(m for n in own for m in [n, *fused.get(n, [])]))
        if not found:
            if last is None:
                unnamed_before += t
            else:
                us[last] += t
            continue
        named += t
        if len(found) > 1:
            together[tuple(found)] = None
        for n in found:
            us[n] = us.get(n, 0.0) + t / len(found)
        if last is None and unnamed_before:
            us[found[0]] += unnamed_before
        last = own[-1]
    if not us or total <= 0:
        return NOT_PROFILED
    return NodeTimes(us, named / total, tuple(together))


def fused_into(run: Set[str], read_from: Mapping[str, Sequence[str]]) -> Dict[str, List[str]]:
    """The nodes fused into each node of `run` (those a kernel led back to): its producers (`read_from`:
    each node's producers read by it alone) that no kernel led back to, and theirs in turn."""
    out: Dict[str, List[str]] = {}
    for node in run:
        stack, seen = [node], []
        while stack:
            for producer in read_from.get(stack.pop(), ()):
                if producer not in run and producer not in seen:
                    seen.append(producer)
                    stack.append(producer)
        if seen:
            out[node] = seen
    return out


def read_alone(builder: PartBuilder, part: Sequence[int]) -> Dict[str, List[str]]:
    """Each node of `part` with the nodes of `part` whose outputs it alone reads (in the part and beyond:
    a value the program reads elsewhere too, or returns, is computed by a kernel of its own)."""
    graph = builder.graph["nodes"]
    inside = set(part)
    producer = {v: graph[i]["name"] for i in part for v in graph[i]["outputs"]}
    readers: Dict[str, Set[str]] = {producer[v]: {""} for v in builder.graph["outputs"] if v in producer}
    for i, node in enumerate(graph):
        for v in values_read(node):
            if v in producer:
                readers.setdefault(producer[v], set()).add(node["name"] if i in inside else "")
    return {graph[i]["name"]: list(dict.fromkeys(
        producer[v] for v in values_read(graph[i]) if v in producer and readers[producer[v]] == {graph[i]["name"]}))
        for i in part}


def part_times(builder: PartBuilder, part: Sequence[int], kernels: Iterable[Tuple[Sequence[str], float]]) -> NodeTimes:
    """The kernels' times of `part` compiled from its ONNX model (as attributed's) counted to its nodes,
    through the names torch.onnx recorded on that model."""
    nodes = {builder.graph["nodes"][i]["name"] for i in part}
    return attributed(kernels, nodes, exported_part(builder, part).fx_names(), read_alone(builder, part))


__all__ = ["attributed", "fused_into", "node_of", "part_times", "read_alone"]
