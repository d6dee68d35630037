"""Where a graph is cut into parts: the kept plan's parts (parts_of_plan), parts of about equal FLOPs cut
where the fewest tensors cross (cut_by_cost), pieces no compiler's kernel spans (cut_between_kernels),
parts with the operators a compiler leaves to ATen taken out (without_ops), and any cut closed so that
only tensors cross a part's boundary (closed)."""
from typing import Any, Collection, Dict, Iterable, List, Optional, Sequence, Tuple

import torch

from .graph import values_read, whole_graph_part

# How many parts cut_by_cost cuts a graph into by default: enough that a sensitive stretch (a model's
# last layers, a normalization) can stay apart while the rest goes its own way, few enough that each part
# keeps most of its compiler's fusions and the calls between parts stay cheap beside the parts' own work.
PARTS = 8


def parts_of_plan(body: Dict[str, Any]) -> List[List[int]]:
    """The kept plan's parts as lists of AtenGraph node indices (each in execution order): a run of
    stages with one group each (or merged into one kernel) is one part; each group of a concurrent
    stage with several is one part."""
    operators = body["operators"]
    parts: List[List[int]] = []
    run: List[int] = []
    for stage in body["schedule"]["stages"]:
        groups = [[n for op in group for n in operators[op]["nodes"]] for group in stage["groups"]]
        if len(groups) == 1 or stage.get("strategy") == "merge":
            run.extend(n for group in groups for n in group)
            continue
        if run:
            parts.append(run)
            run = []
        parts.extend(groups)
    if run:
        parts.append(run)
    return parts


def closed(graph: Dict[str, Any], parts: List[List[int]]) -> List[List[int]]:
    """`parts` with each list a part's operator returns (split, unbind) read element by element inside
    that part (its getitem nodes move there), so only tensors cross a part's boundary, and without parts
    that launch nothing (views alone)."""
    nodes = graph["nodes"]
    values = graph["values"]
    getitems: Dict[int, List[int]] = {}
    for i, node in enumerate(nodes):
        if node["op"] == "getitem":
            getitems.setdefault(node["args"][0]["value"], []).append(i)
    moved = {}
    for k, part in enumerate(parts):
        for i in part:
            for v in nodes[i]["outputs"]:
                if not values[v]["tensor"]:
                    moved.update((g, k) for g in getitems.get(v, []))
    result = []
    for k, part in enumerate(parts):
        members = [i for i in part if moved.get(i, k) == k] + [g for g, owner in moved.items() if owner == k and g not in part]
        if launches(graph, members):
            result.append(sorted(members))
    return result


def launches(graph: Dict[str, Any], part: Collection[int]) -> bool:
    """Whether any node of `part` computes (not a view, nor a getitem of another's returns)."""
    nodes = graph["nodes"]
    return any(nodes[i]["op"] != "getitem" and not _is_view(nodes[i]) for i in part)


def without_ops(graph: Dict[str, Any], parts: List[List[int]], ops: Collection[str]) -> List[List[int]]:
    """`parts` with every node running one of `ops` ("aten::gru") taken out, with the getitems that read
    its returns: each part split where such a node was, the runs between closed (closed), those that read
    nothing from outside them dropped. The nodes left out stay on ATen's kernels between the parts."""
    nodes = graph["nodes"]
    left_out = {i for i, node in enumerate(nodes) if node["op"] in ops}
    if not left_out:
        return parts
    returns = {v for i in left_out for v in nodes[i]["outputs"]}
    left_out |= {i for i, node in enumerate(nodes) if node["op"] == "getitem" and node["args"][0].get("value") in returns}
    runs: List[List[int]] = []
    for part in parts:
        run: List[int] = []
        for i in part:
            if i in left_out:
                if run:
                    runs.append(run)
                run = []
            else:
                run.append(i)
        if run:
            runs.append(run)
    return [run for run in closed(graph, runs) if _reads_input(nodes, run)]


def _reads_input(nodes: List[Dict[str, Any]], part: List[int]) -> bool:
    """Whether a part reads a value made outside it (else it only makes constants, such as a recurrent
    layer's zero initial state: nothing to compile, left on ATen's kernels)."""
    made = {v for i in part for v in nodes[i]["outputs"]}
    return any(v not in made for i in part for v in values_read(nodes[i]))


def _is_view(node: Dict[str, Any]) -> bool:
    op = getattr(getattr(torch.ops, node["op"].split("::")[0]), node["op"].split("::")[1])
    schema = getattr(op, node["overload"])._schema
    return bool(schema.returns) and all(r.alias_info is not None and not r.alias_info.is_write for r in schema.returns)


def _node_flops(body: Dict[str, Any]) -> Dict[int, float]:
    """Each node's FLOPs: its operator's, on the operator's anchor node."""
    return {op["anchor"]: float(op.get("flops", 0.0)) for op in body["operators"]}


def _crossings(graph: Dict[str, Any], order: List[int]) -> List[int]:
    """For each position k of `order`, how many values made at or before it are read after it (the
    tensors a cut after position k hands from one part to the next)."""
    nodes = graph["nodes"]
    made_at = {v: k for k, i in enumerate(order) for v in nodes[i]["outputs"]}
    last_read: Dict[int, int] = {}
    for k, i in enumerate(order):
        for v in values_read(nodes[i]):
            if v in made_at:
                last_read[v] = max(last_read.get(v, k), k)
    for v in graph["outputs"]:
        if v in made_at:
            last_read[v] = len(order)
    counts = [0] * (len(order) + 1)
    for v, end in last_read.items():
        for k in range(made_at[v], end):
            counts[k] += 1
    return counts


def cut_between_kernels(graph: Dict[str, Any], body: Dict[str, Any],
                        fused: Iterable[Sequence[str]]) -> Tuple[List[List[int]], List[int]]:
    """The plan `body`'s graph cut at every place in the plan's order that no kernel of `fused` (each:
    the names of the nodes one kernel ran together) spans, and how many tensors cross each cut: the
    pieces a mix of compilers is chosen over, none splitting what a compiler fused."""
    order = whole_graph_part(body)[0]
    position = {graph["nodes"][i]["name"]: k for k, i in enumerate(order)}
    spanned = [False] * len(order)
    for names in fused:
        at = [position[n] for n in names if n in position]
        for k in range(min(at, default=0), max(at, default=0)):
            spanned[k] = True
    crossing = _crossings(graph, order)
    cuts = [k for k in range(len(order) - 1) if not spanned[k]]
    bounds = [0] + [k + 1 for k in cuts] + [len(order)]
    return [order[a:b] for a, b in zip(bounds, bounds[1:])], [crossing[k] for k in cuts]


def cut_by_cost(graph: Dict[str, Any], body: Dict[str, Any], count: Optional[int] = None) -> List[List[int]]:
    """The plan `body`'s graph cut into at most `count` parts (lists of node ids, in the plan's order) of
    about equal FLOPs, each cut placed where the fewest tensors cross it within half a part of its even
    place (between blocks rather than inside one, where a compiler fuses across). `count`: PARTS where
    not given."""
    count = PARTS if count is None else count
    order = whole_graph_part(body)[0]
    flops = _node_flops(body)
    total = sum(flops.get(i, 0.0) for i in order)
    if count < 2 or total <= 0 or len(order) < 2 * count:
        return [order]
    running, cumulative = 0.0, []
    for i in order:
        running += flops.get(i, 0.0)
        cumulative.append(running)
    crossing = _crossings(graph, order)
    cuts: List[int] = []
    for k in range(1, count):
        target = total * k / count
        ideal = next(p for p, c in enumerate(cumulative) if c >= target)
        low, high = max(cuts[-1] + 1 if cuts else 0, ideal - len(order) // (2 * count)), \
            min(len(order) - 2, ideal + len(order) // (2 * count))
        if low > high:
            continue
        cuts.append(min(range(low, high + 1), key=lambda p: (crossing[p], abs(p - ideal))))
    bounds = [0] + [p + 1 for p in cuts] + [len(order)]
    return [order[a:b] for a, b in zip(bounds, bounds[1:]) if b > a]


__all__ = ["PARTS", "closed", "cut_between_kernels", "cut_by_cost", "launches", "parts_of_plan", "without_ops"]
