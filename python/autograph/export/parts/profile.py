"""How one run of a compiled part spent its time node by node, as its compiler's own profiler measured it
(Compiler.node_times), and what that says of each piece of a cut: the estimate the mix of compilers is
decided on (mixing.py) before any piece is compiled on its own, and the one that says which parts are
worth lowering below float32 (lowering.py)."""
import time
from typing import Any, Callable, Dict, NamedTuple, Tuple

# A profile is read from at most PROFILED_RUNS runs, after one that is not (the first run allocates and
# packs), and from fewer where they take PROFILE_BUDGET_S: shares settle within a run of a large graph,
# whose runs are long.
PROFILED_RUNS, PROFILE_BUDGET_S = 5, 0.25
# The share of a profiled run whose kernels must lead back to the graph's nodes by name for the profile to
# stand for the parts' times.
MIN_NAMED = 0.8


class NodeTimes(NamedTuple):
    """Microseconds of one profiled run per graph node name (`us`), the share of the profiled time whose
    kernels the profiler's names led back to a node of the graph (`named`; the rest was counted to a
    neighbouring node, in the order the kernels ran), and the nodes each kernel of several ran together
    (`fused`: their names; a kernel's time is shared evenly by them, so a cut between them would say
    nothing true of either side)."""
    us: Dict[str, float]
    named: float
    fused: Tuple[Tuple[str, ...], ...] = ()


NOT_PROFILED = NodeTimes({}, 0.0)


def run_profiled(run: Callable[[], Any]) -> int:
    """Calls `run` (one profiled run) PROFILED_RUNS times, or fewer once they took PROFILE_BUDGET_S (one
    at least); returns how many ran."""
    start = time.perf_counter()
    for k in range(1, PROFILED_RUNS + 1):
        run()
        if time.perf_counter() - start >= PROFILE_BUDGET_S:
            return k
    return PROFILED_RUNS


def node_ms(times: NodeTimes, ms: float) -> Dict[str, float]:
    """Each node's ms in a run measured at `ms` as a whole: its share of the profiled run times `ms`."""
    total = sum(times.us.values())
    return {name: us / total * ms for name, us in times.us.items()} if total > 0 else {}


__all__ = ["MIN_NAMED", "NOT_PROFILED", "PROFILED_RUNS", "NodeTimes", "node_ms", "run_profiled"]
