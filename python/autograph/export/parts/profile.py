"""How one run of a compiled part spent its time node by node, as its compiler's own profiler measured it
(Compiler.node_times), and what that says of each piece of a cut: the estimate the mix of compilers is
decided on (mixing.py) before any piece is compiled on its own."""
from typing import Dict, List, NamedTuple, Sequence


class NodeTimes(NamedTuple):
    """Microseconds of one profiled run per graph node name (`us`), and the share of the profiled time
    whose kernels the profiler's names led back to a node of the graph (`named`; the rest was counted to
    a neighbouring node, in the order the kernels ran)."""
    us: Dict[str, float]
    named: float


NOT_PROFILED = NodeTimes({}, 0.0)


def shares(times: NodeTimes, parts: Sequence[Sequence[str]]) -> List[float]:
    """Each part's (its nodes' names) share of the profiled run's time; zeros where nothing was profiled."""
    total = sum(times.us.values())
    if total <= 0:
        return [0.0 for _ in parts]
    return [sum(times.us.get(name, 0.0) for name in part) / total for part in parts]


__all__ = ["NOT_PROFILED", "NodeTimes", "shares"]
