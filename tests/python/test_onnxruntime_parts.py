"""Parts compiled by ONNX Runtime (export/compilers/onnxruntime.py, autograph::run_onnxruntime_part in
libautograph_onnxruntime.so): the package against eager PyTorch, its errors, the converter's faults, the
whole graph as a candidate of the export path kept only where it measures faster, a saved program that
runs it from C++ without ONNX Runtime's Python package, and parts of several compilers mixed where that
measures faster (export/mixing.py).

Tolerance: ONNX Runtime reorders and fuses float32 convolutions and matmuls (its own algorithms, in
float32: it has no TF32 or bf16 path on CPU); their rounding stays below 1e-4 of the output's scale on
these small models, while a wrong wiring or a lower precision moves outputs by 1e-3 or more."""
import hashlib
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

import autograph
from autograph import errors
from autograph._library import openvino_missing, runner_missing
from autograph.export import mixing
from autograph.export.compilers import onnxruntime as ort_parts
from autograph.export.parts import closed, cut_by_cost

ROOT = Path(__file__).resolve().parents[2]
TOL = 1e-4

pytestmark = pytest.mark.skipif(runner_missing("onnxruntime") is not None,
                                reason=f"no ONNX Runtime parts: {runner_missing('onnxruntime')}")
needs_openvino = pytest.mark.skipif(openvino_missing() is not None, reason=f"no OpenVINO parts: {openvino_missing()}")


def _close(got, want, tol=TOL):
    assert got.shape == want.shape and got.dtype == want.dtype
    err = (got - want).abs().max().item() / max(want.abs().max().item(), 1e-12)
    assert err <= tol, err


class Audio(torch.nn.Module):
    """Strided 1-D convolutions over a long signal (where ONNX Runtime's CPU kernels lead), then a head."""

    def __init__(self):
        super().__init__()
        self.convs = torch.nn.ModuleList([torch.nn.Conv1d(1, 16, 9, stride=2), torch.nn.Conv1d(16, 32, 9, stride=2),
                                          torch.nn.Conv1d(32, 32, 5, stride=2), torch.nn.Conv1d(32, 32, 5)])
        self.head = torch.nn.Linear(32, 8)

    def forward(self, x):
        for conv in self.convs:
            x = torch.relu(conv(x))
        return self.head(x.mean(2))


@pytest.fixture(scope="module")
def audio():
    torch.manual_seed(0)
    model, x = Audio().eval(), torch.randn(1, 1, 4000)
    with torch.no_grad():
        want = model(x)
    return model, x, want


@pytest.fixture
def cache(tmp_path, monkeypatch):
    folder = tmp_path / "cache"
    monkeypatch.setenv("AUTOGRAPH_CACHE_DIR", str(folder))
    return folder


def _gm(model, x):
    return torch.export.export(model, (x,)).run_decompositions().module()


def _spec(package, outputs):
    return json.dumps({"format": ort_parts.FORMAT, "digest": hashlib.sha256(package).hexdigest(),
                       "outputs": [{"shape": list(o.shape), "stride": list(o.stride()), "dtype": "Float"} for o in outputs],
                       "flops": 0.0, "compute_bound": True})


def _run(package, x, want):
    return torch.ops.autograph.run_onnxruntime_part([x], torch.frombuffer(bytearray(package), dtype=torch.uint8),
                                                    _spec(package, [want]))


def test_package_runs_through_the_operator_like_eager(audio, cache):
    model, x, want = audio
    package = ort_parts.compile_package(_gm(model, x), (x,))
    assert package.startswith(b"AGORT1\n")
    (got,) = _run(package, x, want)
    _close(got, want)
    assert hashlib.sha256(package).hexdigest() in torch.ops.autograph.loaded_compiled_parts()
    assert torch.ops.autograph.release_compiled_parts([hashlib.sha256(package).hexdigest()]) == 1
    (again,) = _run(package, x, want)  # loaded again from its package
    _close(again, want)


def test_damaged_package_and_wrong_spec_are_clear_errors(audio, cache):
    model, x, want = audio
    package = ort_parts.compile_package(_gm(model, x), (x,))
    with pytest.raises((ValueError, RuntimeError), match="run_onnxruntime_part"):
        _run(b"AGORT1\n" + b"\x00garbage" * 64, x, want)
    with pytest.raises((ValueError, RuntimeError), match="run_onnxruntime_part"):
        _run(b"not a package", x, want)
    with pytest.raises((ValueError, RuntimeError), match="run_onnxruntime_part"):
        torch.ops.autograph.run_onnxruntime_part([x], torch.frombuffer(bytearray(package), dtype=torch.uint8), "{}")
    (got,) = _run(package, x, want)  # the faults broke nothing for the next call
    _close(got, want)


def _optimize(model, x, **options):
    return autograph.optimize(torch.export.export(model, (x,)), (x,), **options)


def test_export_path_times_the_onnxruntime_candidate_and_keeps_the_fastest(audio, cache):
    model, x, want = audio
    optimized, report = _optimize(model, x)
    summary = report["contest"]
    assert report["inductor"] is summary  # the former name, kept readable
    assert "whole_onnxruntime" in summary["candidates"], summary
    times = {name: c["median_ms"] for name, c in summary["candidates"].items() if "median_ms" in c}
    assert summary["kept"] == min(times, key=times.get), summary
    with torch.no_grad():
        _close(optimized.module()(x), want)
    _, report = _optimize(model, x, onnxruntime=False)
    assert "whole_onnxruntime" not in report["contest"]["candidates"] and \
        "whole_onnxruntime" not in report["contest"]["dropped"]


def _first(monkeypatch, fastest):
    """Candidate timings replaced: `fastest` (a name) at 0.5 ms, every other at 1.0."""
    from autograph import export as export_module
    monkeypatch.setattr(export_module.contest, "_time_candidates",
                        lambda candidates, tensors, graph, rounds=10, **_: {n: 0.5 if n == fastest else 1.0 for n in candidates})


def _python(code, timeout=300):
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=timeout,
                          env=dict(os.environ, PYTHONPATH=str(ROOT / "python")))


def test_a_saved_program_runs_its_onnxruntime_part_without_onnxruntimes_python_package(audio, cache, tmp_path,
                                                                                       monkeypatch):
    model, x, want = audio
    _first(monkeypatch, "whole_onnxruntime")
    optimized, report = _optimize(model, x)
    assert report["contest"]["kept"] == "whole_onnxruntime", report["contest"]
    assert report["chosen"].startswith("onnxruntime whole"), report["chosen"]
    calls = " ".join(a for n in optimized.graph.nodes for a in n.args if isinstance(a, str))
    assert '"spinning": true' in calls.replace('\\"', '"')  # the whole program: its pool spins
    torch.export.save(optimized, tmp_path / "model.pt2")
    torch.save({"x": x, "want": want}, tmp_path / "io.pt")
    r = _python(
        "import sys\n"
        "sys.modules['onnxruntime'] = None  # no ONNX Runtime Python: the C++ runner alone runs the part\n"
        "import torch, autograph\n"
        f"io = torch.load({str(tmp_path / 'io.pt')!r})\n"
        f"ep = torch.export.load({str(tmp_path / 'model.pt2')!r})\n"
        "text = [str(a) for n in ep.graph.nodes for a in n.args if isinstance(a, str)]\n"
        "assert any('run_onnxruntime_part' in t for t in text), 'no ONNX Runtime part in the program'\n"
        "got = ep.module()(io['x'])\n"
        "err = (got - io['want']).abs().max().item() / io['want'].abs().max().item()\n"
        "print(err)\n"
        "sys.exit(0 if err <= 1e-4 else 1)\n")
    assert r.returncode == 0, r.stderr[-2000:] + r.stdout


@pytest.mark.parametrize("converter, why", [
    ("import time\ntime.sleep(3600)\n", "did not finish"),
    ("import sys\nopen(sys.argv[2], 'wb').write(b'garbage')\n", "no whole package"),
])
def test_a_converter_that_hangs_or_writes_garbage_is_dropped_with_the_reason_and_leaves_no_entry(
        audio, cache, tmp_path, monkeypatch, converter, why):
    model, x, want = audio
    script = tmp_path / "converter.py"
    script.write_text(converter)
    monkeypatch.setattr(ort_parts._convert, "__file__", str(script))
    monkeypatch.setattr(ort_parts, "CONVERT_TIMEOUT_S", 2.0)
    pending = ort_parts.start_package(_gm(model, x), (x,))
    process = pending._process
    start = time.monotonic()
    with pytest.raises(errors.Error, match=why):
        pending.result()
    assert time.monotonic() - start < 60 and process.poll() is not None
    assert not list(cache.glob("*.ortpart")) and not list(cache.glob("*.partial"))
    optimized, report = _optimize(model, x)
    assert report["contest"]["kept"] != "whole_onnxruntime"
    assert why in report["contest"]["errors"]["whole_onnxruntime"], report["contest"]
    with torch.no_grad():
        _close(optimized.module()(x), want)


def test_a_converter_that_crashes_drops_the_candidate_with_the_signal_and_leaves_no_entry(audio, cache, tmp_path,
                                                                                          monkeypatch):
    """A converter process killed by a signal (a crash inside ONNX Runtime's loader) is no crash of optimize,
    and the part is not loaded in the optimizing process instead, where the same loader would crash it: the
    candidate is dropped, the report says which signal, no cache entry is written, another candidate is
    kept and runs right."""
    model, x, want = audio
    script = tmp_path / "converter.py"
    script.write_text("import os, signal\nos.kill(os.getpid(), signal.SIGSEGV)\n")
    monkeypatch.setattr(ort_parts._convert, "__file__", str(script))
    with pytest.raises(errors.Error, match="crashed .SIGSEGV"):
        ort_parts.compile_package(_gm(model, x), (x,))
    assert not list(cache.glob("*.ortpart")) and not list(cache.glob("*.partial"))
    optimized, report = _optimize(model, x)
    assert report["contest"]["kept"] != "whole_onnxruntime"
    assert "SIGSEGV" in report["contest"]["errors"]["whole_onnxruntime"], report["contest"]
    with torch.no_grad():
        _close(optimized.module()(x), want)


def test_a_converter_that_ends_with_an_error_leaves_the_part_converted_here(audio, cache, tmp_path, monkeypatch):
    """A converter process that ends with an error (it could not load what this process may: a custom op)
    leaves the package the model as exported, which the runner optimizes when it loads."""
    model, x, want = audio
    script = tmp_path / "converter.py"
    script.write_text("import sys\nsys.exit('cannot load the part')\n")
    monkeypatch.setattr(ort_parts._convert, "__file__", str(script))
    package = ort_parts.compile_package(_gm(model, x), (x,))
    (got,) = _run(package, x, want)
    _close(got, want)
    assert len(list(cache.glob("*.ortpart"))) == 1


def test_without_the_runner_the_operator_says_what_to_load():
    r = _python(
        "import torch\n"
        f"torch.ops.load_library({autograph.runtime_library_path()!r})\n"
        "try:\n"
        "    torch.ops.autograph.run_onnxruntime_part([torch.zeros(1)], torch.zeros(8, dtype=torch.uint8), '{}')\n"
        "except RuntimeError as e:\n"
        "    print(e)\n", timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]
    assert "libautograph_onnxruntime.so" in r.stdout, r.stdout


def _parts_timed(monkeypatch, fastest_by_part, how="profiled"):
    """mixing's per-part times replaced: part k's fastest compiler is fastest_by_part[k] (a label); `how`:
    the profiles' estimate ("profiled": the pieces are four parts of equal FLOPs, one tensor crossing each
    cut, which costs little beside a part) or, the profiles not saying, the parts compiled and timed alone."""
    def times(labels, n):
        return [{label: (0.1 if label == fastest_by_part[min(k, len(fastest_by_part) - 1)] else 0.2)
                 for label in labels} for k in range(n)]
    if how == "profiled":
        def profiled(compilers, builder, graph, body, entry):
            parts = closed(graph, cut_by_cost(graph, body, 4))
            return mixing.Pieces(parts, [1] * (len(parts) - 1), times([c.label for c in compilers], len(parts)))
        monkeypatch.setattr(mixing, "_profiled", profiled)
        monkeypatch.setattr(mixing, "MIX_CUT", 0.01)
        monkeypatch.setattr(mixing, "MIX_CUT_MIN_MS", 0.0)
    else:
        monkeypatch.setattr(mixing, "_profiled", lambda *args: None)
        monkeypatch.setattr(mixing, "_timed_parts", lambda compiled, builder, body, parts:
                            times([c.label for c in compiled], len(parts)))


@needs_openvino
@pytest.mark.parametrize("how", ["profiled", "timed alone"])
def test_parts_of_two_compilers_mix_where_that_measures_faster(audio, cache, monkeypatch, how):
    """Each part goes to the compiler that runs it fastest (by the compilers' profiles, or where they cannot
    say by the parts compiled and timed alone); the mix (an ONNX Runtime part beside an OpenVINO part) is
    checked like every candidate and kept where it times fastest as a whole; the report lists each part's
    time under each compiler and how it was measured."""
    model, x, want = audio
    _parts_timed(monkeypatch, ["onnxruntime", "onnxruntime", "openvino", "openvino"], how)
    _first(monkeypatch, "mix")
    optimized, report = _optimize(model, x)
    summary = report["contest"]
    mix = summary["mix"]
    assert mix["compilers"] == ["OpenVINO", "ONNX Runtime"] and len(mix["parts"]) >= 2, mix
    assert all(set(p["ms"]) == {"openvino", "onnxruntime"} for p in mix["parts"]), mix
    assert mix["estimated_by"].endswith("scaled to its measured time" if how == "profiled" else "timed alone"), mix
    assert mix["decision"].startswith("mixed: onnxruntime, openvino"), mix
    assert summary["kept"] == "mix" and summary["candidates"]["mix"]["error"] <= TOL, summary
    calls = " ".join(a for n in optimized.graph.nodes for a in n.args if isinstance(a, str))
    assert "run_onnxruntime_part" in calls and "run_openvino_part" in calls
    assert '\\"spinning\\": true' not in calls and '"spinning": true' not in calls  # beside others: a sleeping pool
    with torch.no_grad():
        _close(optimized.module()(x), want)


@needs_openvino
def test_no_mix_where_one_compiler_is_fastest_on_every_part(audio, cache, monkeypatch):
    model, x, _ = audio
    _parts_timed(monkeypatch, ["openvino"])
    _first(monkeypatch, "whole_openvino")  # both whole graphs within MIX_GAP of each other
    _, report = _optimize(model, x)
    mix = report["contest"]["mix"]
    assert mix["decision"].startswith("not mixed: OpenVINO for every part"), mix
    assert "mix" not in report["contest"]["candidates"]


@needs_openvino
@pytest.mark.parametrize("tensors, least_ms", [(1, 0.0), (3, 0.0), (1, None)])
def test_a_change_of_compiler_is_made_only_where_it_gains_more_than_its_cut_costs(audio, cache, monkeypatch, tensors,
                                                                                  least_ms):
    """Profiles of whole graphs do not see what a cut costs: a piece faster under the other compiler by
    less than MIX_CUT of the fastest candidate's time for each tensor crossing into and out of it stays
    with its neighbours' compiler (no mix); by more, it goes to the other (the mix is built). On a graph
    this small (0.5 ms) a cut costs at least MIX_CUT_MIN_MS (`least_ms` None): no mix either."""
    model, x, _ = audio
    _first(monkeypatch, "whole_openvino")  # the fastest candidate: 0.5 ms
    if least_ms is not None:
        monkeypatch.setattr(mixing, "MIX_CUT_MIN_MS", least_ms)
    cut_ms = mixing.MIX_CUT * 0.5

    def profiled(compilers, builder, graph, body, entry):
        parts = closed(graph, cut_by_cost(graph, body, 3))
        assert len(parts) == 3
        gain = 2 * cut_ms * 2  # twice what the two cuts around the middle piece cost with one tensor each
        ms = [{"openvino": 0.1, "onnxruntime": 0.2}, {"openvino": 0.1 + gain, "onnxruntime": 0.1},
              {"openvino": 0.1, "onnxruntime": 0.2}]
        return mixing.Pieces(parts, [tensors, tensors], ms)
    monkeypatch.setattr(mixing, "_profiled", profiled)
    _, report = _optimize(model, x)
    mix = report["contest"]["mix"]
    if tensors == 1 and least_ms == 0.0:
        assert [p["compiler"] for p in mix["parts"]] == ["openvino", "onnxruntime", "openvino"], mix
        assert mix["decision"].startswith("mixed: openvino, onnxruntime, openvino"), mix
    else:
        assert mix["decision"].startswith("not mixed: OpenVINO for every part"), mix
        assert "mix" not in report["contest"]["candidates"]


@needs_openvino
def test_no_mix_where_the_chosen_parts_and_their_cuts_add_up_to_the_fastest_candidate(audio, cache, monkeypatch):
    model, x, _ = audio
    _first(monkeypatch, "whole_openvino")  # the fastest candidate: 0.5 ms

    def profiled(compilers, builder, graph, body, entry):
        parts = closed(graph, cut_by_cost(graph, body, 2))
        return mixing.Pieces(parts, [1], [{"openvino": 0.1, "onnxruntime": 1.0}, {"openvino": 1.0, "onnxruntime": 0.399}])
    monkeypatch.setattr(mixing, "_profiled", profiled)
    monkeypatch.setattr(mixing, "MIX_CUT", 0.01)
    monkeypatch.setattr(mixing, "MIX_CUT_MIN_MS", 0.0)
    _, report = _optimize(model, x)
    mix = report["contest"]["mix"]
    assert mix["decision"].startswith("not mixed: the fastest parts add up to 0.499 ms and their cuts about"), mix
    assert "mix" not in report["contest"]["candidates"] and mix["fastest_parts_ms"] < 0.5, mix


@needs_openvino
def test_the_mix_is_estimated_from_each_compilers_profile_of_its_whole_graph(audio, cache, monkeypatch):
    """Without a part compiled on its own: each compiler's profile of the whole graph it built names (by
    torch.onnx's node names) at least MIN_NAMED of its run, and the parts' estimates add up to its whole
    graph's measured time."""
    from autograph.export.compilers import openvino as ov_parts
    model, x, _ = audio
    _first(monkeypatch, "whole_openvino")  # both whole graphs within MIX_GAP of each other
    compiled = []
    for module in (ov_parts, ort_parts):
        real = module.start
        monkeypatch.setattr(module, "start", lambda b, part, label, *a, real=real, **k: compiled.append(label) or real(b, part, label, *a, **k))
    _, report = _optimize(model, x)
    mix = report["contest"]["mix"]
    assert mix["estimated_by"].startswith("each compiler's profile"), mix
    assert all(p["named"] >= mixing.MIN_NAMED for p in mix["profiled"].values()), mix
    for label, whole in (("openvino", 0.5), ("onnxruntime", 1.0)):
        assert sum(p["ms"][label] for p in mix["parts"]) == pytest.approx(whole, rel=1e-3), mix
    assert not [label for label in compiled if label.startswith("mix part")], compiled


def test_no_mix_where_one_compilers_whole_graph_is_far_ahead(audio, cache, monkeypatch):
    """Where one compiler's whole graph runs more than MIX_GAP times faster than the other's, no part of the
    slower one is tried (the report has no "mix" entry: nothing was spent on it)."""
    from autograph import export as export_module
    model, x, _ = audio
    far = {"whole_openvino": 1.0, "whole_onnxruntime": 1.0 * mixing.MIX_GAP * 1.5}
    monkeypatch.setattr(export_module.contest, "_time_candidates",
                        lambda candidates, tensors, graph, rounds=10, **_: {n: far.get(n, 5.0) for n in candidates})
    _, report = _optimize(model, x)
    assert "mix" not in report["contest"] and report["contest"]["kept"] == "whole_openvino", report["contest"]


@needs_openvino
def test_the_mix_is_timed_beside_a_fastest_compiled_just_in_time(audio, cache, monkeypatch):
    """Where the fastest candidate is Inductor's whole graph compiled just in time, the mix is timed beside
    it: that candidate reads the program's weights, which the plan on ATen's kernels (not timed then) holds."""
    from autograph.export import contest
    model, x, want = audio

    def timed(calls, device, rounds):
        for call in calls.values():
            call()  # each candidate runs, its inputs found
        return {n: {"whole": 0.5, "mix": 0.25}.get(n, 1.0) for n in calls}
    monkeypatch.setattr(contest, "time_callables", timed)
    _parts_timed(monkeypatch, ["onnxruntime", "openvino"])
    optimized, report = _optimize(model, x)
    summary = report["contest"]
    assert summary["candidates"]["whole"].get("compiled") == "just in time", summary
    assert summary["candidates"]["mix"]["against"]["candidate"] == "whole" and summary["kept"] == "mix", summary
    with torch.no_grad():
        _close(optimized.module()(x), want)


def test_onnx_runtimes_profile_counts_each_convolution_fused_with_its_relu(cache):
    """ONNX Runtime runs a 2-D convolution fused with its ReLU as one kernel named after the ReLU's output
    ("relu_1_nchwc"): its profile of the whole graph, read back to the graph's nodes (node_times), counts
    that kernel's time to the convolution too, so that no convolution looks free to the mix."""
    from autograph.export import aten_import
    from autograph.export import parts as parts_layer
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Conv2d(1, 16, 3), torch.nn.ReLU(), torch.nn.Conv2d(16, 32, 3),
                                torch.nn.ReLU(), torch.nn.BatchNorm2d(32), torch.nn.Flatten(2)).eval()
    decomposed = torch.export.export(model, (torch.randn(1, 1, 64, 64),)).run_decompositions({})
    graph, _, imported = aten_import.import_graph(decomposed)
    builder = parts_layer.PartBuilder(decomposed, graph, imported.value_of, imported.weights, torch.device("cpu"))
    try:
        whole = list(range(len(graph["nodes"])))
        times = ort_parts.node_times(builder, whole, ort_parts.start(builder, whole, "whole", alone=True)())
    finally:
        builder.close()
    convolutions = [n["name"] for n in graph["nodes"] if n["op"].startswith("aten::conv")]
    assert len(convolutions) == 2 and times.named >= mixing.MIN_NAMED, times
    assert all(times.us.get(name, 0.0) > 0 for name in convolutions), times.us
