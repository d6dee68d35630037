"""How the export path times its candidates side by side (export.time_callables), with stand-in
callables that sleep: on CPU each timed run follows at least SETTLE_MS of untimed runs of the same
callable (other thread pools go idle meanwhile), and a candidate far slower than the fastest after two
rounds runs no more (one slowed run is not enough)."""
import time

import torch

from autograph.export import timing as export


def _sleeper(ms, calls, name):
    def call():
        calls[name] = calls.get(name, 0) + 1
        time.sleep(ms / 1e3)
    return call


def test_each_timed_run_on_cpu_follows_the_settling_runs_of_the_same_callable():
    calls = {}
    start = time.perf_counter()
    times = export.time_callables({"one": _sleeper(1.0, calls, "one")}, torch.device("cpu"), rounds=3)
    spent_ms = (time.perf_counter() - start) * 1e3
    # 3 rounds, each of >= SETTLE_MS of untimed 1 ms calls (at least one) and then the timed call
    assert spent_ms >= 3 * export.SETTLE_MS and calls["one"] >= 3 * 2
    assert times["one"] >= 1.0


def test_a_candidate_over_twice_the_fastest_after_two_rounds_is_timed_no_more():
    calls = {}
    candidates = {"fast": _sleeper(1.0, calls, "fast"), "slow": _sleeper(30.0, calls, "slow")}
    times = export.time_callables(candidates, torch.device("cpu"), rounds=10)
    # each round one settling run (30 ms > 10 ms) and one timed; after two rounds only "fast" is left
    assert calls["slow"] == 4
    assert times["slow"] > 2 * times["fast"]


def test_one_run_slowed_by_something_else_does_not_drop_the_fastest_candidate():
    calls = {}

    def disturbed():  # its first round's runs slowed 10x (another process on the cores), then 0.5 ms
        calls["disturbed"] = calls.get("disturbed", 0) + 1
        time.sleep((5.0 if calls["disturbed"] <= 3 else 0.5) / 1e3)

    times = export.time_callables({"fast": _sleeper(1.0, calls, "fast"), "disturbed": disturbed},
                                  torch.device("cpu"), rounds=10)
    assert calls["disturbed"] > 6  # timed on after its slow first round
    assert times["disturbed"] < times["fast"]


def test_a_callable_is_timed_only_once_the_threads_the_one_before_it_left_spinning_are_idle():
    import threading
    spinning = []  # the thread the "spins" callable leaves busy after it returns, as a spinning pool does

    def spins():
        until = time.perf_counter() + 0.06
        thread = threading.Thread(target=lambda: [None for _ in iter(lambda: time.perf_counter() < until, False)])
        thread.start()
        spinning.append(thread)

    met_a_spinner = []

    def quiet():
        met_a_spinner.append(any(t.is_alive() for t in spinning))

    export.samples_side_by_side({"spins": spins, "quiet": quiet}, torch.device("cpu"), rounds=3)
    for thread in spinning:
        thread.join()
    assert met_a_spinner and not any(met_a_spinner)
