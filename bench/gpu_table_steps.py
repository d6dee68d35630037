"""bench/gpu_table.py's parent: each step a child process under its own cap within the budget."""
import os
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Callable, List, Optional

from gpu_table_rows import CAPTURE_FAILED, CLI_METHODS, PRECISION_METHODS, PROG, merge, write_csv

ROOT = Path(__file__).resolve().parents[1]
DRIVER = ROOT / "bench" / "gpu_table.py"  # the steps' processes run the driver with --worker / --warm-only

# Caps per step (seconds) and the least time worth starting one with, sized from what the steps took on an H100
# (bench/results/gpu-2026-11-26b-h100; the main step's export path is the longest, and Inductor's one-time CPU-ISA
# check, which the warm step pays instead, made it longer still there).
CAPS = {"warm": 120, "cli": 90, "main": 240, "precision": 150, "max_autotune": 180}
LEAST = {"warm": 20, "cli": 20, "main": 45, "precision": 40, "max_autotune": 40}
RESERVE_S = 15  # for merging, the report and the summary
# `autograph bench`'s cap at least (up to CAPS["cli"]): killed, it writes no results.csv and saves no module, and
# the main step then has none of jit_frozen, nimble and autograph_graph to load.
CLI_FLOOR_S = 60
# Of a model's share of the budget, for cli + main when the precision step, max-autotune or both wait for
# passes of their own.
PASS1_SHARE = {0: 1.0, 1: 0.7, 2: 0.6}


class Steps:
    """Runs each step as a child process under timeout(1) within the budget and keeps a record of it.
    `plan`: runs nothing; each step takes its whole cap on a clock of its own (the worst case), so the
    records are the caps' arithmetic: what each step would get, and what the budget would not reach."""

    def __init__(self, args, plan: bool = False):
        self.args, self.records, self.plan = args, [], plan
        self.clock = 0.0
        self.start = self.now()
        self.deadline = self.start + args.budget
        self.env = child_env(args)

    def now(self) -> float:
        return self.clock if self.plan else time.monotonic()

    def left(self) -> float:
        return self.deadline - self.now() - RESERVE_S

    def skip(self, label: str, why: str) -> dict:
        record = {"step": label, "result": "skipped", "seconds": 0, "cap": 0, "note": why}
        self.records.append(record)
        print(f"{PROG}: {label}: skipped: {why}", flush=True)
        return record

    def run(self, label: str, kind: str, cmd: Callable[[int], List[str]], cap: float) -> dict:
        """cmd(cap) under `timeout -k 10 cap` (its children too: timeout signals its process group); its
        output into logs/LABEL.log. A cap below the step's least time skips it, saying so."""
        cap = int(min(cap, CAPS[kind], self.left()))
        if cap < LEAST[kind]:
            return self.skip(label, f"not reached: {max(int(self.left()), 0)} s left of the {self.args.budget:g} s "
                                    f"budget, the step needs at least {LEAST[kind]} s")
        if self.plan:
            self.clock += cap
            record = {"step": label, "result": "planned", "seconds": cap, "cap": cap, "note": ""}
            self.records.append(record)
            return record
        cmd = cmd(cap)
        log = self.args.out / "logs" / (label.replace(" ", "-") + ".log")
        print(f"{PROG}: {label} (cap {cap} s, log {log.relative_to(self.args.out)})", flush=True)
        t0 = time.monotonic()
        with log.open("w") as f:
            child = subprocess.Popen(["timeout", "-k", "10", str(cap)] + cmd, stdout=f, stderr=subprocess.STDOUT,
                                     env=self.env, cwd=ROOT)
            try:
                rc = child.wait(timeout=cap + 30)
            except subprocess.TimeoutExpired:
                child.kill()
                rc = 124
            except BaseException:  # stopped (SIGTERM: gpu_table.main): the step too, its rows so far kept
                child.terminate()  # timeout(1) passes it on to the step's process
                try:
                    child.wait(timeout=15)
                except subprocess.TimeoutExpired:
                    child.kill()
                raise
        seconds = round(time.monotonic() - t0)
        text = log.read_text(errors="replace")
        if rc == 0:
            result, note = "passed", ""
        elif rc in (124, 137):
            result, note = "timed out", f"killed at its cap of {cap} s"
        else:
            result = "FAILED"
            lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
            note = f"exit {rc}: " + (lines[-1][:240] if lines else "no output")
        failed = capture_failures_in(text)
        if failed:
            note = (note + f"; {failed} failed CUDA Graph capture(s) in the log").lstrip("; ")
        record = {"step": label, "result": result, "seconds": seconds, "cap": cap, "note": note}
        self.records.append(record)
        print(f"{PROG}: {label}: {result} in {seconds} s{(': ' + note) if note else ''}", flush=True)
        # results.csv as of every step that ended: a kill of the whole run (no TERM first) leaves it.
        write_csv(self.args.out / "results.csv", merge(self.args)[0])
        return record


def capture_failures_in(log: str) -> int:
    """Failed CUDA Graph captures in a step's log: a line each from the CLI, a counted line from log_warnings."""
    total = 0
    for line in log.splitlines():
        if CAPTURE_FAILED in line:
            counted = re.search(r"warning \((\d+) times\)", line)
            total += int(counted.group(1)) if counted else 1
    return total


def child_env(args) -> dict:
    """The caches of every compiler in one folder shared by all steps (warm where an earlier step or an
    earlier run filled them); the checkout's python/ and bench/ importable."""
    env = dict(os.environ)
    cache = args.cache_dir
    env.update(XDG_CACHE_HOME=str(cache), TORCHINDUCTOR_CACHE_DIR=str(cache / "inductor"),
               TRITON_CACHE_DIR=str(cache / "triton"), PYTHONUNBUFFERED="1")
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), str(ROOT / "python")] + [p for p in [env.get("PYTHONPATH")] if p])
    return env


def worker_cmd(args, model: str, step: str, methods: List[str], cap: int, anchor: str = "") -> List[str]:
    # -X faulthandler: a crash (the export path segfaulted on the GPU before) leaves its Python stack in the log.
    cmd = [sys.executable, "-X", "faulthandler", str(DRIVER), "--worker", model, "--methods", *methods,
           "--rows", str(args.out / "steps" / model / step / "rows"), "--deadline", f"{time.time() + cap - 5:.0f}",
           "--device", args.device, "--batch", str(args.batch), "--warmup", str(args.warmup), "--runs", str(args.runs),
           "--zoo", str(args.zoo), "--cli-cache", str(args.cache_dir / "bench")]
    return cmd + (["--anchor", anchor] if anchor else [])


def run_steps(args, wanted: List[str], plan: bool = False, steps: Optional[Steps] = None) -> Steps:
    """Warm-up; then per model `autograph bench` and the main process; then per model the precision step (the
    methods below float32, eager beside them as an anchor); then max-autotune per model with what is left:
    every model's float32 table is complete before the later passes may take their time. `plan`: the
    caps' arithmetic only (Steps)."""
    steps = steps or Steps(args, plan)
    if not args.no_warm:
        steps.run("warm", "warm", lambda cap: [sys.executable, str(DRIVER), "--warm-only", "--out",
                                               str(args.out), "--device", args.device, "--cache-dir", str(args.cache_dir)],
                  CAPS["warm"])
    cli_methods = [m for m in CLI_METHODS if m in wanted and m != "jit"]  # jit: always, as the CLI's reference
    main_methods = [m for m in ["eager", "jit"] + cli_methods + ["torch_compile_default", "torch_compile_reduce_overhead",
                                                                  "autograph_export"] if m in wanted + ["jit"]]
    autotune = "torch_compile_max_autotune" in wanted
    lowered = [m for m in PRECISION_METHODS if m in wanted]
    n = len(args.models)
    for i, model in enumerate(args.models):
        share = steps.left() / (n - i) * PASS1_SHARE[bool(autotune) + bool(lowered)]
        t0 = steps.now()
        if cli_methods:
            if not steps.plan and not Path(args.cli).is_file():
                steps.skip(f"{model} cli", f"no `autograph` CLI at {args.cli} (--cli)")
            else:
                steps.run(f"{model} cli", "cli",
                          lambda cap: [str(args.cli), "bench", model, "--zoo", str(args.zoo), "--device", args.device,
                           "--batch", str(args.batch), "--methods", "jit", *cli_methods, "--warmup", str(args.warmup),
                           "--runs", str(args.runs), "--out", str(args.out / "steps" / model / "cli"),
                           "--cache", str(args.cache_dir / "bench")], max(share * 0.4, CLI_FLOOR_S))
        cap = max(share - (steps.now() - t0), LEAST["main"])
        main = steps.run(f"{model} main", "main", lambda c: worker_cmd(args, model, "main", main_methods, c), cap)
        # A crash (not the cap) loses the methods not yet built, the export path last among them: those get a
        # process of their own, eager timed beside them as the anchor.
        rows = args.out / "steps" / model / "main" / "rows"
        lost = [m for m in main_methods if not (rows / f"{m}.json").exists() and m not in ("eager", "jit")]
        if main["result"] == "FAILED" and lost:
            cap = max(share - (steps.now() - t0), LEAST["main"])
            steps.run(f"{model} retry", "main",
                      lambda c: worker_cmd(args, model, "retry", lost, c, anchor="eager"), cap)
    for i, model in enumerate(args.models if lowered else []):
        # An equal share of what is left, less what max-autotune needs at least (of which it gets a part too).
        reserve = LEAST["max_autotune"] * n if autotune else 0
        cap = (steps.left() - reserve) / (n - i) * (0.6 if autotune else 1.0)
        steps.run(f"{model} precision", "precision",
                  lambda c: worker_cmd(args, model, "precision", lowered, c, anchor="eager"), cap)
    for i, model in enumerate(args.models if autotune else []):
        # All that is left but the least for each model after it: a cold autotuning that does not finish
        # in an equal share would give no row at all, where the first models' finishing gives some.
        cap = steps.left() - LEAST["max_autotune"] * (n - i - 1)
        steps.run(f"{model} max_autotune", "max_autotune",
                  lambda c: worker_cmd(args, model, "max_autotune", ["torch_compile_max_autotune"], c, anchor="eager"),
                  cap)
    return steps
