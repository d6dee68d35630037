"""`autograph bench`: every method of the paper's table side by side, outputs checked against jit,
results.csv with docs/design.md's columns, optimized modules cached for reruns; bench/report.py turns
the CSV into the tables and the chart."""
import csv
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PAPER_METHODS = ["jit", "jit_frozen", "taso_jit", "nimble", "taso_nimble", "ios", "autograph"]
COLUMNS = ["model", "batch", "device", "method", "median_ms", "p10_ms", "p90_ms", "max_abs_err", "max_rel_err",
           "search_s"]


def bench(cli, zoo, out, cache, *extra):
    return subprocess.run([cli, "bench", "rnntc_sru", "--zoo", str(zoo), "--warmup", "1", "--runs", "3",
                           "--out", str(out), "--cache", str(cache), *extra],
                          capture_output=True, text=True, timeout=600)


def test_paper_methods_side_by_side_then_cached(cli, zoo, tmp_path):
    out, cache = tmp_path / "out", tmp_path / "cache"
    r = bench(cli, zoo, out, cache, "--batch", "1", "2")
    assert r.returncode == 0, r.stderr
    with (out / "results.csv").open() as f:
        reader = csv.DictReader(f)
        assert reader.fieldnames == COLUMNS
        rows = list(reader)
    assert sorted((row["batch"], row["method"]) for row in rows) == sorted(
        (b, m) for b in ("1", "2") for m in PAPER_METHODS)
    for row in rows:
        # Every method computes the model's function: float32 rounding at most (SRU is a short RNN).
        assert float(row["max_rel_err"]) < 1e-4, row
        assert 0 < float(row["p10_ms"]) <= float(row["median_ms"]) <= float(row["p90_ms"])
    first_search = {(row["batch"], row["method"]): row["search_s"] for row in rows}
    assert float(first_search[("1", "ios")]) > 0
    # The table: one per batch, the paper's columns, the fastest cell in bold.
    md = (out / "results.md").read_text()
    assert "### batch 1, cpu" in md and "### batch 2, cpu" in md and "**" in md
    assert "| model | jit | jit_frozen | taso_jit | nimble | taso_nimble | ios | autograph |" in md

    # A rerun loads the optimized modules from the cache: the searches' seconds come back unchanged.
    r = bench(cli, zoo, out, cache, "--batch", "1", "2")
    assert r.returncode == 0, r.stderr
    with (out / "results.csv").open() as f:
        again = {(row["batch"], row["method"]): row["search_s"] for row in csv.DictReader(f)}
    assert again == first_search

    # The report: tables and a chart from the CSV.
    rep = subprocess.run([sys.executable, str(ROOT / "bench" / "report.py"), str(out)], capture_output=True, text=True)
    assert rep.returncode == 0, rep.stderr
    assert (out / "speedup.svg").is_file() and "Speedup over jit" in rep.stdout


def _methods_run(out):
    with (out / "results.csv").open() as f:
        return sorted(row["method"] for row in csv.DictReader(f))


def test_a_cache_entry_that_does_not_load_is_made_anew(cli, zoo, tmp_path):
    # On a CPU optimize_for_inference folds convolutions' weights into oneDNN constants that TorchScript
    # saves but cannot load: such a module is not cached, and every rerun still runs jit_frozen.
    out, cache = tmp_path / "out", tmp_path / "cache"
    run = lambda *methods: subprocess.run(  # noqa: E731
        [cli, "bench", "squeezenet", "--zoo", str(zoo), "--warmup", "1", "--runs", "2", "--out", str(out),
         "--cache", str(cache), "--methods", *methods], capture_output=True, text=True, timeout=600)
    for _ in range(2):
        r = run("jit", "jit_frozen")
        assert r.returncode == 0, r.stderr
        assert _methods_run(out) == ["jit", "jit_frozen"]
        assert "not caching" in r.stderr and "does not load back" in r.stderr
    assert not list(cache.glob("*jit_frozen*"))
    # An entry damaged on disk is dropped and made anew, not a failure of this run or the next.
    r = run("jit", "taso_jit")
    assert r.returncode == 0, r.stderr
    [saved] = cache.glob("*taso_jit*.pt")
    saved.write_bytes(b"not a module")
    r = run("jit", "taso_jit")
    assert r.returncode == 0, r.stderr
    assert "does not load" in r.stderr and "made anew" in r.stderr
    assert _methods_run(out) == ["jit", "taso_jit"]
    r = run("jit", "taso_jit")
    assert r.returncode == 0 and "not caching" not in r.stderr, r.stderr


def test_bad_method_or_model_is_one_clear_error(cli, zoo, tmp_path):
    r = bench(cli, zoo, tmp_path, tmp_path, "--methods", "tensorrt")
    assert r.returncode != 0 and "tensorrt" in r.stderr and "Traceback" not in r.stderr
    r = subprocess.run([cli, "bench", "no_such_model", "--zoo", str(zoo), "--runs", "1"],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode != 0 and "no_such_model" in r.stderr
