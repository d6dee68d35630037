"""Option precision and its accuracy gate (option tolerance) on the export path.

Bad values are InputErrors before any work; with precision="bf16" on CPU, OpenVINO's candidate competes
once more computing in bfloat16 (the same package, the precision in its spec), and Inductor's whole graph
too where the CPU has bf16 instructions (compiled just in time, packaged where it wins), each kept only where each
output stays within the tolerance of float32's and it measures faster; a candidate beyond the tolerance
stays out and the program keeps float32; a saved program keeps its precision.

Tolerances: the float32 candidates are judged as everywhere (check.py's float32 floor); the bfloat16
candidate's error on this small network is of the order of bfloat16's resolution (2^-8 = 3.9e-3) relative
to the output's scale, so 0.1 admits it with room, and 1e-6 (far below bfloat16's resolution) cannot."""
import pytest
import torch

import autograph
from autograph._library import openvino_missing
from cpu_features import needs_bf16_cpu
from autograph.export.compilers.cpu_features import cpu_has_bf16
from precision_models import Cancelling
from stand_in_timing import timed as _timed

needs_openvino = pytest.mark.skipif(openvino_missing() is not None, reason=f"no OpenVINO parts: {openvino_missing()}")


class Block(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 16, 3, padding=1)
        self.pointwise = torch.nn.Conv2d(16, 32, 1)
        self.head = torch.nn.Linear(32, 10)

    def forward(self, x):
        y = torch.relu(self.pointwise(torch.relu(self.conv(x))))
        return self.head(y.mean((2, 3)))


@pytest.fixture(scope="module")
def block():
    torch.manual_seed(0)
    model = Block().eval()
    x = torch.randn(1, 3, 24, 24)
    with torch.no_grad():
        want = model(x)
    return model, x, want, torch.export.export(model, (x,))


@pytest.fixture(autouse=True)
def cache(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("AUTOGRAPH_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "precision-cache"))


def _error(got, want):
    return ((got - want).abs().max() / want.abs().max()).item()


@pytest.mark.parametrize("options, message", [
    ({"precision": "fp8"}, "option 'precision'"),
    ({"precision": 16}, "option 'precision'"),
    ({"tolerance": -0.1}, "option 'tolerance'"),
    ({"tolerance": "small"}, "option 'tolerance'"),
])
def test_bad_precision_options_are_input_errors_before_any_work(block, monkeypatch, options, message):
    from autograph.export import optimize as export_optimize
    monkeypatch.setattr(export_optimize, "import_graph", lambda *a, **k: pytest.fail("work began"))
    _, _, _, ep = block
    with pytest.raises(autograph.InputError, match=message):
        autograph.optimize(ep, **options)
    with pytest.raises(autograph.InputError, match=message):
        autograph.Settings(**options)


def test_fp32_by_default_offers_nothing_lowered(block):
    _, x, want, ep = block
    optimized, report = autograph.optimize(ep, method="sequential")
    contest = report["inductor"]
    assert "precision" not in contest and not any(name.endswith("_bf16") for name in contest["candidates"])
    assert all(entry.get("precision", "fp32") == "fp32" for entry in contest["candidates"].values())


@needs_openvino
def test_a_bf16_candidate_within_the_tolerance_and_faster_is_kept_and_reported(block, monkeypatch, offers_bf16):
    _, x, want, ep = block
    _timed(monkeypatch, {"whole_openvino_bf16": 1.0})
    optimized, report = autograph.optimize(ep, method="sequential", precision="bf16", tolerance=0.1)
    contest = report["inductor"]
    entry = contest["candidates"]["whole_openvino_bf16"]
    assert contest["kept"] == "whole_openvino_bf16" and entry["precision"] == "bf16"
    assert 0 < entry["error"] <= 0.1  # bfloat16 rounds: an error, and within the bound
    # Inductor's whole graph in bf16 competes too where the CPU has bf16 instructions (just in time here).
    lowered = (["whole_bf16"] if cpu_has_bf16() else []) + ["whole_openvino_bf16"]
    precision = contest["precision"]
    assert report["precision"] == precision  # one entry, the TorchScript path's shape (test_torchscript_precision.py)
    assert {k: precision[k] for k in ("asked", "tolerance", "judged_inputs", "calibration_inputs", "lowered", "met",
                                      "kept", "note", "parts")} == \
        {"asked": "bf16", "tolerance": 0.1, "judged_inputs": 1, "calibration_inputs": 0, "lowered": lowered,
         "met": lowered, "kept": "bf16", "note": None, "parts": []}
    assert precision["error"] == entry["error"] and precision["lowered_ms"] == 1.0 and precision["fp32_ms"] > 0
    assert report["chosen"].startswith("openvino whole in bf16")
    with torch.no_grad():
        got = optimized.module()(x)
    assert got.dtype == want.dtype and 0 < _error(got, want) <= 0.1


@needs_openvino
@pytest.mark.skipif(not cpu_has_bf16(), reason="this CPU has no bf16 instructions: Inductor lowers nothing")
def test_inductors_bf16_whole_graph_competes_beside_openvinos_and_is_packaged_where_it_wins(block, monkeypatch,
                                                                                            tmp_path):
    monkeypatch.setenv("AUTOGRAPH_CACHE_DIR", str(tmp_path / "cache"))  # compiled just in time, not read
    _, x, want, ep = block
    _timed(monkeypatch, {"whole_bf16": 0.5, "whole_openvino_bf16": 1.0})
    optimized, report = autograph.optimize(ep, method="sequential", precision="bf16", tolerance=0.1)
    contest = report["inductor"]
    entry = contest["candidates"]["whole_bf16"]
    assert contest["kept"] == "whole_bf16" and entry["precision"] == "bf16" and entry["compiled"] == "just in time"
    assert 0 < entry["error"] <= 0.1 and 0 < entry["packaged_error"] <= 0.1  # the package judged by the tolerance
    with torch.no_grad():
        got = optimized.module()(x)
    assert 0 < _error(got, want) <= 0.1  # computed in bf16, within the bound
    path = tmp_path / "kept.pt2"
    torch.export.save(optimized, str(path))
    with torch.no_grad():
        assert torch.equal(torch.export.load(str(path)).module()(x), got)  # reloads computing as it did


@needs_openvino
@needs_bf16_cpu
def test_a_bf16_candidate_beyond_the_tolerance_stays_out_and_the_program_keeps_fp32(block, monkeypatch):
    _, x, want, ep = block
    _timed(monkeypatch, {"whole_openvino_bf16": 0.5, "whole_openvino": 1.0})  # lowered: fastest, but wrong
    optimized, report = autograph.optimize(ep, method="sequential", precision="bf16", tolerance=1e-6)
    contest = report["inductor"]
    dropped = contest["dropped"]["whole_openvino_bf16"]
    assert dropped["why"] == "beyond tolerance" and dropped["bound"] == 1e-6 and dropped["error"] > 1e-6
    assert contest["kept"] == "whole_openvino" and contest["precision"]["met"] == []
    assert contest["precision"]["kept"] == "fp32"
    with torch.no_grad():
        assert _error(optimized.module()(x), want) <= 1e-4  # float32's
    with pytest.raises(autograph.Error, match="no candidate in bf16 met the tolerance"):
        autograph.optimize(ep, method="sequential", precision="bf16", tolerance=1e-6, strict=True)


def test_where_no_compiler_lowers_the_report_says_so(block, monkeypatch):
    from autograph.export.compilers import inductor
    monkeypatch.setattr(inductor, "cpu_has_bf16", lambda: False)  # Inductor's bf16 wants bf16 instructions on CPU
    _, x, want, ep = block
    _, report = autograph.optimize(ep, method="sequential", precision="bf16", openvino=False, onnxruntime=False)
    precision = report["inductor"]["precision"]
    assert precision["lowered"] == [] and precision["kept"] == "fp32" and "no compiler here lowers" in precision["note"]


@needs_openvino
@needs_bf16_cpu
def test_a_saved_bf16_program_keeps_its_precision_in_a_fresh_process(block, monkeypatch, tmp_path, fresh_python):
    model, x, want, ep = block
    _timed(monkeypatch, {"whole_openvino_bf16": 1.0})
    optimized, report = autograph.optimize(ep, method="sequential", precision="bf16", tolerance=0.1)
    assert report["inductor"]["kept"] == "whole_openvino_bf16"
    with torch.no_grad():
        here = optimized.module()(x)
    torch.export.save(optimized, tmp_path / "model.pt2")
    torch.save({"x": x, "here": here, "want": want}, tmp_path / "io.pt")
    script = (
        "import torch, autograph\n"
        f"program = torch.export.load({str(tmp_path / 'model.pt2')!r})\n"
        f"io = torch.load({str(tmp_path / 'io.pt')!r})\n"
        "(call,) = [n for n in program.graph.nodes if n.target == torch.ops.autograph.execute.default]\n"
        "assert 'precision' in call.args[1] and 'bf16' in call.args[1], 'the spec lost its precision'\n"
        "with torch.no_grad():\n"
        "    got = program.module()(io['x'])\n"
        "def error(a, b):\n"
        "    return ((a - b).abs().max() / b.abs().max()).item()\n"
        "# as in the optimizing process (bf16), not float32's output\n"
        "assert error(got, io['here']) <= 1e-6 < 1e-5 < error(got, io['want']), (error(got, io['here']), "
        "error(got, io['want']))\n"
        "print('ok')\n")
    fresh_python(script)


@pytest.mark.parametrize("calibration, message", [
    (torch.randn(1, 3, 24, 24), "calibration: a list of input tuples"),
    ([(torch.randn(1, 3, 24, 24), torch.randn(1))], "not structured like the example inputs"),
    ([(torch.randn(2, 3, 24, 24),)], r"calibration\[0\], input 0: torch.float32 \(2, 3, 24, 24\)"),
    ([(torch.randn(1, 3, 24, 24).double(),)], "takes? the example's dtypes and shapes"),
    ([3.0], r"calibration\[0\]: a tuple of inputs"),
])
def test_bad_calibration_inputs_are_input_errors_before_any_work(block, monkeypatch, calibration, message):
    from autograph.export import optimize as export_optimize
    monkeypatch.setattr(export_optimize, "import_graph", lambda *a, **k: pytest.fail("work began"))
    model, x, _, ep = block
    with pytest.raises(autograph.InputError, match=message):
        autograph.optimize(ep, precision="bf16", calibration=calibration)
    with pytest.raises(autograph.InputError, match=message):  # before the export of an nn.Module too
        autograph.optimize(model, (x,), ir="export", precision="bf16", calibration=calibration)


@pytest.mark.parametrize("calibration, message", [
    (torch.randn(1, 3, 24, 24), "calibration: a list of input tuples"),
    ([(torch.randn(2, 3, 24, 24),)], r"calibration\[0\], input 0: torch.float32 \(2, 3, 24, 24\)"),
    ([(torch.randn(1, 3, 24, 24), torch.randn(1))], "not structured like the example inputs"),
])
def test_bad_calibration_inputs_on_the_torchscript_path_are_input_errors_before_tracing(block, monkeypatch,
                                                                                         calibration, message):
    from autograph import api
    monkeypatch.setattr(api, "to_script_module", lambda *a, **k: pytest.fail("tracing began"))
    model, x, _, _ = block
    with pytest.raises(autograph.InputError, match=message):
        autograph.optimize(model, [x], precision="bf16", calibration=calibration)


@needs_openvino
@needs_bf16_cpu
def test_a_bf16_candidate_within_the_tolerance_on_the_example_but_not_on_a_calibration_input_stays_out(monkeypatch):
    torch.manual_seed(0)
    model = Cancelling().eval()
    example = (0.01 * torch.randn(1, 64), 100 * torch.randn(1, 64))
    calibration = [(100 * torch.randn(1, 64), 0.01 * torch.randn(1, 64))]
    _timed(monkeypatch, {"whole_openvino_bf16": 1.0})
    ep = torch.export.export(model, example)
    _, report = autograph.optimize(ep, method="sequential", precision="bf16", tolerance=0.02)
    assert report["inductor"]["kept"] == "whole_openvino_bf16"  # on the example alone: within
    optimized, report = autograph.optimize(ep, method="sequential", precision="bf16", tolerance=0.02,
                                           calibration=calibration)
    contest = report["inductor"]
    dropped = contest["dropped"]["whole_openvino_bf16"]
    assert dropped["why"] == "beyond tolerance" and "calibration input 0" in dropped["detail"]
    assert contest["kept"] != "whole_openvino_bf16" and contest["precision"]["met"] == []
    assert contest["precision"]["judged_inputs"] == 2  # the example and the calibration input
    with torch.no_grad():
        got, want = optimized.module()(*calibration[0]), model(*calibration[0])
    assert _error(got, want) <= 1e-3  # float32's floor (check.py), on an output that is a small difference


def test_openvino_offers_bf16_only_on_a_cpu_that_computes_it(monkeypatch):
    """Elsewhere OpenVINO computes float32 under a bf16 hint: such a candidate would be float32 labelled bf16."""
    from autograph.export.compilers import openvino
    cpu = torch.device("cpu")
    monkeypatch.setattr(openvino, "cpu_has_bf16", lambda: False)
    assert openvino.COMPILER.lowered(cpu, "bf16", "whole_openvino") == []
    assert "bf16" not in openvino.COMPILER.lowered(cpu, "int8", "whole_openvino")
    assert "bf16 on a CPU that computes it (not this one)" in openvino.COMPILER.lowering()
    monkeypatch.setattr(openvino, "cpu_has_bf16", lambda: True)
    assert openvino.COMPILER.lowered(cpu, "bf16", "whole_openvino") == ["bf16"]
    assert openvino.COMPILER.lowered(torch.device("cuda"), "bf16", "whole_openvino") == []
