"""What a part of an AtenGraph is made of, read off the graph and its plan: the values a node reads, the
nodes in an order that defines each value before it is read, the whole graph as a part, and a part's
FLOPs."""
from typing import Any, Dict, List, Sequence, Tuple


def values_read(node: Dict[str, Any]) -> List[int]:
    """The value ids an AtenGraph node reads (its arguments' values and value lists)."""
    ids = []
    for a in list(node["args"]) + list(node["kwargs"].values()):
        if isinstance(a, dict) and "value" in a:
            ids.append(a["value"])
        elif isinstance(a, dict) and "values" in a:
            ids.extend(v for v in a["values"] if v is not None)
    return ids


def topological(nodes: List[Dict[str, Any]]) -> List[Dict[str, Any]]:
    """`nodes` in an order where each value is defined before it is read, as close to the given one as
    that allows (a part's node may read values that nodes listed after its first member define)."""
    producer = {v: i for i, n in enumerate(nodes) for v in n["outputs"]}
    done, order = set(), []

    def visit(i: int) -> None:
        stack = [(i, False)]
        while stack:
            j, expanded = stack.pop()
            if j in done:
                continue
            if expanded:
                done.add(j)
                order.append(nodes[j])
                continue
            stack.append((j, True))
            stack.extend((producer[v], False) for v in reversed(values_read(nodes[j])) if v in producer and producer[v] not in done)

    for i in range(len(nodes)):
        visit(i)
    return order


def whole_graph_part(body: Dict[str, Any]) -> List[List[int]]:
    """The plan `body`'s graph as one part, its nodes in the plan's order."""
    return [[n for stage in body["schedule"]["stages"] for group in stage["groups"]
             for op in group for n in body["operators"][op]["nodes"]]]


def every_node(graph: Dict[str, Any]) -> List[int]:
    """The whole graph as one part, known before any plan."""
    return list(range(len(graph["nodes"])))


def part_costs(body: Dict[str, Any], part: Sequence[int]) -> Tuple[float, bool]:
    """The FLOPs of a part's operators and whether any of them is compute-bound."""
    members = set(part)
    ops = [op for op in body["operators"] if op["anchor"] in members]
    return sum(op.get("flops", 0.0) for op in ops), any(op["kind"] == "compute" for op in ops)


__all__ = ["every_node", "part_costs", "topological", "values_read", "whole_graph_part"]
