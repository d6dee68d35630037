"""bench/gpu_table.py, the one-call GPU table: its method names and columns, the check that fails an
incomplete results.csv, the merge of `autograph bench`'s rows with the driver's, the ratios of the summary,
and the driver end to end on CPU with eager alone (the whole table is rehearsed by scripts/gpu_check.sh
--rehearse: its compiles are too slow for the test suite)."""
import csv
import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))
import gpu_table  # noqa: E402

DRIVER = ROOT / "bench" / "gpu_table.py"
TABLE_METHODS = ["eager", "torch_compile_default", "torch_compile_reduce_overhead", "torch_compile_max_autotune",
                 "jit_frozen", "nimble", "autograph_graph", "autograph_export", "autograph_export_tf32", "autograph_export_bf16",
                 "autograph_export_fp16", "torch_compile_autocast_bf16", "torch_compile_autocast_fp16",
                 "autograph_graph_bf16"]


def write_table(path, rows, fields=None):
    fields = fields or gpu_table.FIELDS
    with path.open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=fields, extrasaction="ignore", lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)
    return path


def row(model, method, median=1.0, **extra):
    r = {"model": model, "batch": 1, "device": "cuda", "method": method, "median_ms": median, "p10_ms": median,
         "p90_ms": median, "max_abs_err": 0, "max_rel_err": 0, "search_s": 1}
    if method.startswith("autograph_export"):
        r.update(kept="whole", streams=1, cuda_graphs=1)
    if method in gpu_table.PRECISION_METHODS:
        r.update(precision=gpu_table.PRECISION_METHODS[method])
    r.update(extra)
    return r


def test_the_table_has_exactly_these_method_names_and_the_bench_columns_first():
    assert gpu_table.METHODS == TABLE_METHODS
    assert gpu_table.FIELDS[:10] == ["model", "batch", "device", "method", "median_ms", "p10_ms", "p90_ms",
                                     "max_abs_err", "max_rel_err", "search_s"]
    for column in ["kept", "streams", "cuda_graphs", "tf32_off_max_rel_err", "input2_max_rel_err", "cli_median_ms"]:
        assert column in gpu_table.FIELDS
    assert set(gpu_table.CLI_METHODS) == {"jit", "jit_frozen", "nimble", "autograph_graph"}


def test_check_table_passes_a_complete_table(tmp_path):
    rows = [row(m, method) for m in ("a", "b") for method in TABLE_METHODS + ["jit"]]
    assert gpu_table.check_table(write_table(tmp_path / "results.csv", rows), ["a", "b"], TABLE_METHODS) == []


def test_check_table_names_missing_columns_rows_medians_and_unknown_methods(tmp_path):
    fields = [f for f in gpu_table.FIELDS if f != "input2_max_rel_err"]
    problems = gpu_table.check_table(write_table(tmp_path / "a.csv", [row("a", "eager")], fields), ["a"], ["eager"])
    assert problems == ["column input2_max_rel_err missing"]

    rows = [row("a", "eager"), row("a", "nimble", median="nan"), row("a", "torch_compile"),
            row("a", "autograph_export", kept=""), row("a", "autograph_export_bf16", precision="")]
    problems = gpu_table.check_table(write_table(tmp_path / "b.csv", rows), ["a"],
                                     ["eager", "nimble", "autograph_graph", "autograph_export", "autograph_export_bf16"])
    assert "unknown method name 'torch_compile' (a)" in problems
    assert "a: no nimble row with a median" in problems
    assert "a: no autograph_graph row with a median" in problems
    assert "a: the autograph_export row lacks kept / streams / cuda_graphs" in problems
    assert "a: the autograph_export_bf16 row does not say what it computed in (precision)" in problems
    assert not any("eager" in p for p in problems)
    assert gpu_table.check_table(tmp_path / "absent.csv", ["a"], ["eager"]) == [f"{tmp_path / 'absent.csv'} was not written"]


def test_check_command_exit_status(tmp_path):
    complete = write_table(tmp_path / "ok.csv", [row("a", m) for m in TABLE_METHODS])
    incomplete = write_table(tmp_path / "bad.csv", [row("a", "eager")])
    run = lambda csv_path, *extra: subprocess.run(  # noqa: E731
        [sys.executable, str(DRIVER), "--check", str(csv_path), "--models", "a", *extra],
        capture_output=True, text=True, timeout=60)
    assert run(complete).returncode == 0
    r = run(incomplete)
    assert r.returncode == 1 and "a: no nimble row with a median" in r.stdout
    # The rehearsal (on CPU) does not ask for max-autotune or fp16: a table without them is complete there.
    no_autotune = write_table(tmp_path / "rehearsal.csv",
                              [row("a", m) for m in TABLE_METHODS if m != "torch_compile_max_autotune"
                               and not m.endswith("fp16")])
    assert run(no_autotune).returncode == 1
    assert run(no_autotune, "--rehearse").returncode == 0


def test_merge_prefers_the_drivers_timing_and_keeps_the_clis(tmp_path):
    steps = tmp_path / "steps" / "m"
    (steps / "cli").mkdir(parents=True)
    write_table(steps / "cli" / "results.csv", [row("m", "jit", 3.0), row("m", "jit_frozen", 2.0),
                                                row("m", "nimble", 1.0)], fields=gpu_table.FIELDS[:10])
    rows_dir = steps / "main" / "rows"
    rows_dir.mkdir(parents=True)
    (rows_dir / "nimble.json").write_text(json.dumps(row("m", "nimble", 1.5, timed="side by side (3 methods)")))
    (rows_dir / "eager.json").write_text(json.dumps(row("m", "eager", 4.0, timed="side by side (3 methods)")))
    (rows_dir / "jit_frozen.skipped.json").write_text(json.dumps({"why": "failed: cannot load"}))
    args = type("Args", (), {"models": ["m"], "out": tmp_path, "warmup": 20, "runs": 50})()
    rows, why = gpu_table.merge(args)
    by_method = {r["method"]: r for r in rows}
    assert [r["method"] for r in rows] == ["eager", "jit", "jit_frozen", "nimble"]  # the table's order
    assert by_method["nimble"]["median_ms"] == 1.5 and by_method["nimble"]["cli_median_ms"] == "1.0"
    assert by_method["jit_frozen"]["timed"] == "autograph bench"
    assert "cannot load" in by_method["jit_frozen"]["note"]
    assert why == {("m", "jit_frozen"): "failed: cannot load"}
    gpu_table.write_csv(tmp_path / "results.csv", rows)
    written = list(csv.DictReader((tmp_path / "results.csv").open()))
    assert written[0]["tf32_off_max_rel_err"] == "" and written[0]["max_rel_err"] in ("0", "0.0")


def test_ratios_over_eager_the_best_compile_mode_and_nimble():
    rows = [row("m", "eager", 4.0, input2_max_rel_err=1e-4), row("m", "torch_compile_default", 2.0),
            row("m", "torch_compile_reduce_overhead", 1.0), row("m", "nimble", 0.5),
            row("m", "autograph_graph", 0.25, input2_max_rel_err=0.5)]
    lines = gpu_table.ratio_lines(rows, ["m"])
    graph = next(line for line in lines if line.split()[0] == "autograph_graph")
    assert graph.split()[1:5] == ["0.250", "16.00", "4.00", "2.00"]
    assert "⚠" in graph  # far above eager's own difference from the TF32-off reference
    assert lines[-1] == "  (best torch.compile mode: torch_compile_reduce_overhead)"


def test_precision_rows_are_compared_with_float32_and_autocast_and_never_pass_for_the_best_compile_mode():
    rows = [row("m", "eager", 4.0, input2_max_rel_err=1e-4), row("m", "torch_compile_default", 2.0),
            row("m", "autograph_export", 1.0), row("m", "torch_compile_autocast_bf16", 0.8, input2_max_rel_err=4e-3),
            row("m", "autograph_export_bf16", 0.5, input2_max_rel_err=4e-3, kept="whole_bf16", anchor_ms=2.0)]
    lines = gpu_table.ratio_lines(rows, ["m"])
    assert "  (best torch.compile mode: torch_compile_default)" in lines  # float32 modes alone
    assert not any("⚠" in line for line in lines)  # bf16's own error is expected, and said below
    # eager ran twice as fast in the precision step (2.0 ms beside it, 4.0 in the main step): the float32
    # program's 1.0 ms counts as 0.5 there, level with bf16's 0.5
    assert lines[-1] == ("  autograph_export_bf16: 1.00x autograph_export, 1.60x torch_compile_autocast_bf16; "
                         "kept whole_bf16 computing in bf16")


def test_driver_end_to_end_on_cpu_with_eager(tmp_path, zoo):
    out = tmp_path / "out"
    r = subprocess.run([sys.executable, str(DRIVER), "--rehearse", "--methods", "eager", "--no-warm", "--zoo", str(zoo),
                        "--out", str(out), "--runs", "1", "--warmup", "0"],
                       capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert r.returncode == 0, r.stdout + r.stderr
    rows = list(csv.DictReader((out / "results.csv").open()))
    assert [x["method"] for x in rows] == ["eager", "jit"]
    assert all(float(x["median_ms"]) > 0 and x["input2_max_rel_err"] == "0" for x in rows)
    summary = (out / "summary.txt").read_text()
    assert "table: COMPLETE" in summary and "squeezenet main" in summary
    assert (out / "results.md").is_file()


# The first GPU command's arithmetic: scripts/gpu_quick_check.sh's default budget, less what stage 0, the
# zoo and the warm step may take before the table (the warm step's cap, the longest of the three side by
# side) and the script's own reserve for its tarball.
QUICK_CHECK_BUDGET_S, BEFORE_TABLE_S, RESERVE_S = 570, 150, 25


def plan(*args):
    return subprocess.run([sys.executable, str(DRIVER), "--plan", "--device", "cuda", "--no-warm", *args],
                          capture_output=True, text=True, timeout=120, cwd=ROOT)


def test_stage_one_fits_the_first_gpu_command_by_the_caps_arithmetic():
    budget = QUICK_CHECK_BUDGET_S - BEFORE_TABLE_S - RESERVE_S
    r = plan("--stage", "1", "--budget", str(budget))
    print(r.stdout)  # the arithmetic, in the test's log
    assert r.returncode == 0, r.stdout + r.stderr
    assert "the float32 table fits" in r.stdout
    for model in gpu_table.STAGES[1][0]:
        assert f"{model} cli" in r.stdout and f"{model} main" in r.stdout
    script = (ROOT / "scripts" / "gpu_quick_check.sh").read_text()
    assert f"budget=${{budget:-{QUICK_CHECK_BUDGET_S}}}" in script  # the default this arithmetic assumes


def test_the_plan_says_when_the_budget_leaves_a_model_no_room():
    r = plan("--stage", "1", "--budget", "150")
    assert r.returncode == 1
    assert "NO ROOM for" in r.stdout and "nasnet_a_mobile main" in r.stdout


def test_each_stage_names_known_methods_and_stage_three_the_rest_of_the_zoo():
    from models import registry
    for stage, (models, methods) in gpu_table.STAGES.items():
        assert set(methods) <= set(gpu_table.METHODS), stage
    assert gpu_table.stage_models(3) == [m for m in registry.NAMES if m not in gpu_table.STAGES[1][0]]


def test_a_main_step_that_crashed_gets_its_lost_methods_retried_in_a_process_of_their_own(tmp_path):
    """A crash in the main step (not its cap) loses the methods built after it, the export path last: they
    get a `retry` step with eager beside them, and merge reads its rows."""
    import gpu_table_steps
    args = gpu_table.parse_args(["--out", str(tmp_path), "--models", "bert_base", "--device", "cuda",
                                 "--methods", "eager", "nimble", "autograph_export", "--no-warm", "--budget", "400"])
    rows = tmp_path / "steps" / "bert_base" / "main" / "rows"
    rows.mkdir(parents=True)
    for method in ("eager", "jit", "nimble"):
        (rows / f"{method}.json").write_text(json.dumps(row("bert_base", method)))

    class Crashing(gpu_table_steps.Steps):
        def run(self, label, kind, cmd, cap):
            record = {"step": label, "result": "FAILED" if label.endswith("main") else "passed", "seconds": 1,
                      "cap": int(cap), "note": "", "cmd": cmd(int(cap))}
            self.records.append(record)
            return record

    steps = gpu_table_steps.run_steps(args, ["eager", "nimble", "autograph_export"], steps=Crashing(args))
    retry = [r for r in steps.records if r["step"] == "bert_base retry"]
    assert len(retry) == 1
    cmd = retry[0]["cmd"]
    assert cmd[cmd.index("--methods") + 1:cmd.index("--rows")] == ["autograph_export"]
    assert cmd[cmd.index("--anchor") + 1] == "eager"
    # Its rows are merged beside the main step's.
    retried = tmp_path / "steps" / "bert_base" / "retry" / "rows"
    retried.mkdir(parents=True)
    (retried / "autograph_export.json").write_text(json.dumps(row("bert_base", "autograph_export")))
    merged, _ = gpu_table.merge(args)
    assert [r["method"] for r in merged] == ["eager", "jit", "nimble", "autograph_export"]


def test_results_csv_holds_every_ended_steps_rows_before_the_run_ends(tmp_path):
    """A kill of the whole run (no TERM first) must still leave the rows of the steps that ended."""
    import gpu_table_steps
    args = gpu_table.parse_args(["--out", str(tmp_path), "--models", "resnet50", "--device", "cuda",
                                 "--methods", "eager", "--no-warm", "--budget", "100"])
    (tmp_path / "logs").mkdir()
    rows = tmp_path / "steps" / "resnet50" / "main" / "rows"
    rows.mkdir(parents=True)
    (rows / "eager.json").write_text(json.dumps(row("resnet50", "eager", 4.5)))
    record = gpu_table_steps.Steps(args).run("resnet50 main", "main", lambda cap: ["true"], 60)
    assert record["result"] == "passed"
    written = list(csv.DictReader((tmp_path / "results.csv").open()))
    assert [(r["model"], r["method"], r["median_ms"]) for r in written] == [("resnet50", "eager", "4.5")]


def test_a_replay_profile_says_host_and_waited_time_and_writes_its_table_and_trace(tmp_path):
    """bench/gpu_table_profile.py on CPU (the CUDA activity is added on a GPU): both files written, the
    host and waited medians in the first line, the profiled operator in the table; a method that fails
    while profiled is logged and costs nothing else."""
    import gzip
    import torch
    import gpu_table_profile
    x = torch.randn(64, 64)
    ctx = {"x1": [x], "device": torch.device("cpu"), "sync": lambda: None}

    def failing(xs):
        raise RuntimeError("replay broke")
    lines = []
    gpu_table_profile.profile_replays(ctx, {"autograph_export": lambda xs: torch.mm(xs[0], xs[0]),
                                            "autograph_graph": failing, "eager": lambda xs: xs[0]},
                                      ["autograph_export", "autograph_graph", "eager"], tmp_path, lines.append)
    text = (tmp_path / "autograph_export.profile.txt").read_text()
    assert text.startswith("autograph_export: host time of a call ") and "waited for" in text
    assert "aten::mm" in text
    assert b"aten::mm" in gzip.open(tmp_path / "autograph_export.trace.json.gz").read()
    assert lines[0].startswith("autograph_export: host time") and lines[1] == "autograph_graph: profile failed: RuntimeError: replay broke"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["autograph_export.profile.txt", "autograph_export.trace.json.gz"]


def test_no_replay_is_profiled_when_the_steps_cap_is_too_near(tmp_path):
    import torch
    import gpu_table_profile
    lines = []
    gpu_table_profile.profile_replays({"x1": [torch.ones(2)], "device": torch.device("cpu"), "sync": lambda: None},
                                      {"autograph_export": lambda xs: xs[0] + 1}, ["autograph_export"], tmp_path,
                                      lines.append, lambda: 9.0, 15.0)
    assert lines == ["autograph_export: no profile: 9 s left of the step's cap"] and not list(tmp_path.iterdir())
