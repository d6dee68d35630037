"""A profile of the methods that replay a plan (the export path and the TorchScript path), taken by
bench/gpu_table_worker.py after a step's rows are timed and checked: where a replay spends its time.

For each method, into the step's rows folder (logs.tar.gz carries it; not *.json, which merge() reads as
rows):
- `<method>.profile.txt`: the host time of one call (until it returns, no wait for the device) and the
  time of a call waited for, medians of PROFILE_CALLS calls each; then torch.profiler's table of the
  profiled calls, the operators and kernels with the most device time first;
- `<method>.trace.json.gz`: the same calls as a Chrome trace (chrome://tracing, Perfetto).
A host time near the waited time says the call is bound by its launches (Python, guards, input copies),
not by its kernels: then the device idles between kernels, and methods timed side by side pay it more.
"""
import gzip
import os
import shutil
import statistics
import tempfile
import time
from pathlib import Path
from typing import Callable, Dict, List

import torch_compile_bench as tcb

# The methods whose replays are profiled: the two paths the table compares.
PROFILED = ("autograph_export", "autograph_graph")
PROFILE_CALLS = 10
TABLE_ROWS = 30


def _median_ms(call: Callable[[], object], sync: Callable[[], None], wait: bool) -> float:
    times: List[float] = []
    for _ in range(PROFILE_CALLS):
        sync()
        start = time.perf_counter()
        call()
        if wait:
            sync()
        times.append((time.perf_counter() - start) * 1e3)
    sync()
    return statistics.median(times)


def profile_method(method: str, call: Callable[[], object], device, sync: Callable[[], None],
                   rows_dir: Path) -> str:
    """Profiles PROFILE_CALLS calls of `call` (already built and warm); writes the two files; returns a
    one-line summary for the step's log."""
    import torch
    from torch.profiler import ProfilerActivity, profile
    with torch.inference_mode():
        host_ms = _median_ms(call, sync, wait=False)
        waited_ms = _median_ms(call, sync, wait=True)
        activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device.type == "cuda" else [])
        with profile(activities=activities) as prof:
            for _ in range(PROFILE_CALLS):
                call()
            sync()
    sort = "self_device_time_total" if device.type == "cuda" else "self_cpu_time_total"
    table = prof.key_averages().table(sort_by=sort, row_limit=TABLE_ROWS, max_name_column_width=80)
    head = (f"{method}: host time of a call {host_ms:.4g} ms (returns without waiting), {waited_ms:.4g} ms "
            f"waited for; medians of {PROFILE_CALLS} calls each; the profiler's {PROFILE_CALLS} calls below")
    (rows_dir / f"{method}.profile.txt").write_text(head + "\n\n" + table + "\n")
    with tempfile.TemporaryDirectory() as tmp:
        trace = os.path.join(tmp, "trace.json")
        prof.export_chrome_trace(trace)
        with open(trace, "rb") as src, gzip.open(rows_dir / f"{method}.trace.json.gz", "wb") as dst:
            shutil.copyfileobj(src, dst)
    return head


def profile_replays(ctx: dict, runs: Dict[str, Callable[[list], object]], methods, rows_dir: Path,
                    log: Callable[[str], None], time_left: Callable[[], float] = lambda: float("inf"),
                    least_s: float = 0.0) -> None:
    """The PROFILED methods among `methods`, each on the timed input while `time_left()` is at least
    `least_s` seconds; a failure is logged, never raised (the rows stand without a profile)."""
    x1 = ctx["x1"]
    for method in [m for m in PROFILED if m in methods and m in runs]:
        if time_left() < least_s:
            log(f"{method}: no profile: {max(time_left(), 0):.0f} s left of the step's cap")
            continue
        run = runs[method]
        try:
            log(profile_method(method, lambda: run(x1), ctx["device"], ctx["sync"], rows_dir))
        except Exception as e:  # noqa: BLE001 - a profile is an extra, never the step's failure
            log(f"{method}: profile failed: {tcb.one_line(e)}")
