"""`autograph optimize --trace FILE.json`: a Chrome / Perfetto trace of one run of the optimized module,
with each ATen operator on the thread that ran it and each schedule group as a labelled range."""
import collections
import json
import subprocess


def test_trace_shows_operators_on_their_threads_and_the_schedule_groups(cli, zoo, tmp_path):
    trace = tmp_path / "trace.json"
    r = subprocess.run([cli, "optimize", str(zoo / "squeezenet.pt"), "-o", str(tmp_path / "sq.pt"), "--method", "nimble",
                        "--max-streams", "2", "--input-shape", "1,3,64,64",
                        # no rewrites: which ones a timed check keeps varies from run to run, and a kept
                        # prepack_onednn runs convolutions as oneDNN calls that the profiler names otherwise
                        "--no-substitutions", "--no-stitch", "--no-check-rewrites", "--trace", str(trace), "--json"],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    report = json.loads(r.stdout)
    assert report["trace"] == str(trace)
    events = [e for e in json.loads(trace.read_text())["traceEvents"] if e.get("ph") == "X"]
    ops = [e for e in events if e.get("cat") == "cpu_op"]
    convs = [e for e in ops if "convolution" in e["name"]]
    assert len(convs) >= 26  # squeezenet's 26 convolutions, each with its start and duration
    assert all(e["dur"] >= 0 and e["ts"] > 0 for e in convs)
    groups = [e for e in events if e["name"].startswith("autograph stage ")]
    stages = collections.Counter(e["name"].split(" group ")[0] for e in groups)
    assert len(stages) == report["stages"]
    assert len(groups) == report["groups"]
    if report["streams"] > 1:  # the groups of a concurrent stage ran on threads of their own
        assert len({e["tid"] for e in groups}) >= 2
    # Every convolution ran inside one of the groups, on the group's thread.
    spans = [(e["tid"], e["ts"], e["ts"] + e["dur"]) for e in groups]
    for c in convs:
        assert any(tid == c["tid"] and start <= c["ts"] <= end for tid, start, end in spans), c


def test_trace_to_an_unwritable_place_is_a_clear_error(cli, zoo, tmp_path):
    r = subprocess.run([cli, "optimize", str(zoo / "squeezenet.pt"), "-o", str(tmp_path / "sq.pt"), "--method", "sequential",
                        "--input-shape", "1,3,32,32", "--trace", "/nonexistent/dir/trace.json"],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode != 0
    assert "trace" in r.stderr and "Traceback" not in r.stderr and "terminate" not in r.stderr
