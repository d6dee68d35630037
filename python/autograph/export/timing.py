"""How the export path times what competes: the one timing policy of optimize's candidates, the .pt2
CLI's bench and the benchmarks (samples_side_by_side; time_callables races it). The C++ harness
(csrc/executor/run_timing.h), which times the search's schedules, races the same way; it also flushes
caches on the GPU and keeps the mean of the fastest runs, which the search's many short stages need."""
import statistics
import time
from typing import Any, Callable, Dict, List, Optional

import torch

# Racing, as the C++ side times schedules (executor/run_timing.h): after this many rounds a callable whose
# fastest run is slower than the lowest median by more than the margin runs no more rounds, and the
# timing stops when the medians left are all within the tie of the lowest. One whose fastest run is
# more than _RACE_FAR times the lowest median leaves after _FAR_AFTER rounds: not after one, since a single
# run another process slowed (a converter's process ending, the host taking a core of two) can measure
# over twice its typical time, and once dropped an INT8 candidate faster than the one kept.
_RACE_AFTER, RACE_MARGIN, _RACE_TIE, _RACE_FAR, _FAR_AFTER = 3, 0.05, 0.01, 2.0, 2

# On CPU, how long a callable runs untimed before each timed run (at least once): the other callables'
# thread pools go idle meanwhile. Inductor's and ATen's OpenMP workers spin for a while after their
# last parallel region (libgomp's default spin count), and a part run straight after another compiler's
# code measured much slower than on its own. A model called in a loop meets itself, not its rivals.
SETTLE_MS = 10.0
# Before a callable's settling runs, until the process's other threads are idle (its CPU time advancing by
# under IDLE_SHARE of one core over an IDLE_WINDOW_MS window), at most IDLE_WAIT_MS: a pool that spins
# after its work (ONNX Runtime's whole program: 40-75 ms on 2 cores) slowed the next callable ~1.8x for
# longer than the settling. Other threads' CPU time is credited by the scheduler's tick, so a window
# shorter than a few ticks reads a spinning thread as idle now and then. A process whose other threads
# stay busy (the user's) is waited on once per timing, not per run.
IDLE_SHARE, IDLE_WINDOW_MS, IDLE_WAIT_MS = 0.15, 10.0, 500.0
# On a GPU, untimed runs of each callable before the first round (CPU: the settling warms them up).
GPU_WARMUP = 2


def samples_side_by_side(calls: Dict[str, Callable[[], Any]], device: torch.device, rounds: int,
                         race: bool = False, warmup: Optional[int] = None) -> Dict[str, List[float]]:
    """Ms of each call per round (_timed), the calls run in turn within a round (drift hits all alike):
    on a GPU after `warmup` (default GPU_WARMUP) untimed runs each, on
    CPU each timed run after SETTLE_MS of untimed runs of the same call (at least one; `warmup` runs
    more first where given), those after the process's other threads went idle (_IdleWait: the call
    before may have left a pool spinning). With `race`, a call clearly slower than the lowest median
    stops early (see _RACE_AFTER; its samples are then fewer, and still the slower) and all stop once
    those left are tied."""
    sync = torch.cuda.synchronize if device.type == "cuda" else (lambda: None)
    settle_s = SETTLE_MS / 1e3 if device.type == "cpu" else None
    warmup = (GPU_WARMUP if settle_s is None else 0) if warmup is None else warmup
    samples: Dict[str, List[float]] = {name: [] for name in calls}
    racing = set(calls)
    idle = _IdleWait() if settle_s is not None and len(calls) > 1 else None
    with torch.no_grad():
        for call in calls.values():
            for _ in range(warmup):
                call()
        sync()
        for r in range(rounds):
            for name, call in calls.items():
                if name not in racing:
                    continue
                if idle is not None:
                    idle.wait()
                if settle_s is not None:
                    until = time.perf_counter() + settle_s
                    call()
                    while time.perf_counter() < until:
                        call()
                samples[name].append(_timed(call, device))
            if race and len(racing) > 1:
                racing = _still_racing(samples, racing, r + 1)
                if len(racing) == 1 or r + 1 >= _RACE_AFTER and _tied(samples, racing):
                    break
    return samples


class _IdleWait:
    """Waits until the process's other threads are idle (IDLE_SHARE), at most IDLE_WAIT_MS; after one wait
    that ran out (threads busy for a reason of their own) it waits no more."""

    def __init__(self):
        self.gave_up = False

    def wait(self) -> bool:
        """Whether the other threads were found idle."""
        if self.gave_up:
            return False
        window = IDLE_WINDOW_MS / 1e3
        deadline = time.perf_counter() + IDLE_WAIT_MS / 1e3
        while True:
            cpu, wall = time.process_time(), time.perf_counter()
            time.sleep(window)
            busy = (time.process_time() - cpu) / max(time.perf_counter() - wall, 1e-9)
            if busy < IDLE_SHARE:
                return True
            if time.perf_counter() >= deadline:
                self.gave_up = True
                return False


def _timed(call: Callable[[], Any], device: torch.device) -> float:
    """One call's ms: on a GPU between two CUDA events on the current stream (what the device spent,
    host gaps between its launches included, as `autograph bench` times), elsewhere wall time."""
    if device.type != "cuda":
        begin = time.perf_counter()
        call()
        return (time.perf_counter() - begin) * 1e3
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    call()
    end.record()
    end.synchronize()
    return start.elapsed_time(end)


def _still_racing(samples: Dict[str, List[float]], racing: set, rounds_done: int) -> set:
    if rounds_done < _FAR_AFTER:
        return racing
    lowest = min(statistics.median(samples[name]) for name in racing)
    slower = RACE_MARGIN if rounds_done >= _RACE_AFTER else _RACE_FAR - 1
    return {name for name in racing if min(samples[name]) <= lowest * (1 + slower)}


def _tied(samples: Dict[str, List[float]], racing: set) -> bool:
    lowest = min(statistics.median(samples[name]) for name in racing)
    return all(statistics.median(samples[name]) <= lowest * (1 + _RACE_TIE) for name in racing)


def time_callables(calls: Dict[str, Callable[[], Any]], device: torch.device, rounds: int = 10,
                   race: bool = True) -> Dict[str, float]:
    """Median ms of each callable, timed side by side and raced (samples_side_by_side): what optimize
    decides by. Without `race`, every callable every round: a slow one's time is a median too, not its
    first run's."""
    return {name: statistics.median(s) for name, s in samples_side_by_side(calls, device, rounds, race=race).items()}


def percentile(samples: List[float], q: float) -> float:
    """The `q` quantile (0..1) of `samples`, the nearest rank below."""
    xs = sorted(samples)
    return xs[min(len(xs) - 1, int(q * len(xs)))]


__all__ = ["samples_side_by_side", "time_callables", "percentile", "RACE_MARGIN", "SETTLE_MS", "IDLE_WAIT_MS",
           "GPU_WARMUP"]
