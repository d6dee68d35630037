"""What the mix of compilers is chosen over (export/parts/cut.py cut_between_kernels) and how
(export/mixing.py cheapest_owners): the graph in the plan's order cut only where no compiler's kernel
spans the cut, and each piece's compiler chosen for the least time in all, a change of compiler costing
what its cut costs."""
import pytest

from autograph.export.mixing import cheapest_owners, views_with_neighbours
from autograph.export.parts import cut_between_kernels


def _chain(count, reads):
    """A graph of `count` nodes named n0, n1, ... (node i makes value i + 1 from value i, and from the
    values in reads.get(i)) and its plan body, one operator per node in order."""
    nodes = [{"name": f"n{i}", "op": "aten::x", "args": [{"value": i}] + [{"value": v} for v in reads.get(i, [])],
              "kwargs": {}, "outputs": [i + 1]} for i in range(count)]
    graph = {"nodes": nodes, "outputs": [count]}
    body = {"operators": [{"nodes": [i], "anchor": i, "flops": 1.0} for i in range(count)],
            "schedule": {"stages": [{"groups": [[i]]} for i in range(count)]}}
    return graph, body


def test_the_graph_is_cut_everywhere_but_inside_a_kernel_of_several_nodes():
    graph, body = _chain(6, {})
    pieces, crossing = cut_between_kernels(graph, body, [("n3", "n1")])  # one kernel ran n1, n2 and n3
    assert pieces == [[0], [1, 2, 3], [4], [5]] and crossing == [1, 1, 1]
    assert cut_between_kernels(graph, body, [])[0] == [[i] for i in range(6)]
    assert cut_between_kernels(graph, body, [("n0", "n5")])[0] == [list(range(6))]


def test_each_cut_says_how_many_tensors_cross_it():
    graph, body = _chain(5, {3: [1]})  # n3 reads n0's output too (a residual)
    pieces, crossing = cut_between_kernels(graph, body, [("elsewhere", "n4")])
    assert len(pieces) == 5 and crossing == [1, 2, 2, 1]


@pytest.mark.parametrize("switch, owners", [
    (0.5, ["a", "b", "a"]),   # the middle piece gains 2.0 under b, the two changes cost 1.0
    (1.5, ["a", "a", "a"]),   # they cost 3.0: all a
    ([0.5, 5.0], ["a", "b", "b"]),  # the cut after the middle piece is dear: the change is made before it
])
def test_each_piece_goes_where_the_least_time_in_all_is_made(switch, owners):
    ms = [{"a": 1.0, "b": 2.0}, {"a": 3.0, "b": 1.0}, {"a": 1.0, "b": 2.0}]
    assert cheapest_owners(ms, switch if isinstance(switch, list) else [switch, switch]) == owners


def test_a_change_of_compiler_is_paid_once_for_a_run_of_pieces():
    ms = [{"a": 1.0, "b": 5.0}] + [{"a": 2.0, "b": 1.0}] * 4
    assert cheapest_owners(ms, [3.0] * 4) == ["a", "b", "b", "b", "b"]  # gains 4.0 for one change of 3.0
    assert cheapest_owners(ms[:3], [3.0] * 2) == ["a", "a", "a"]  # gains 2.0: not worth it


def _ops(*ops):
    """A chain graph of real operators ("aten::relu.default", "aten::transpose.int"), one per node."""
    graph, _ = _chain(len(ops), {})
    for node, op in zip(graph["nodes"], ops):
        node["op"], node["overload"] = op.split(".")
    return graph


def test_a_piece_of_views_alone_goes_with_the_compiler_before_it():
    """A part of views alone is no part (closed drops it): the parts of one compiler around it, made one,
    would both feed it and read it. It goes with the piece before it, at the start with the first that
    computes."""
    graph = _ops("aten::relu.default", "aten::transpose.int", "aten::relu.default")
    assert views_with_neighbours(graph, [[0], [1], [2]], ["a", "b", "a"]) == ["a", "a", "a"]
    assert views_with_neighbours(graph, [[0], [1], [2]], ["a", "b", "b"]) == ["a", "a", "b"]
    graph = _ops("aten::transpose.int", "aten::relu.default", "aten::relu.default")
    assert views_with_neighbours(graph, [[0], [1], [2]], ["b", "a", "a"]) == ["a", "a", "a"]
