"""Option precision int8 (export path, CPU): OpenVINO's candidates quantized by NNCF on the calibration
inputs (export/compilers/openvino.py start_quantized, openvino_quantize.py in a process of its own), judged by
option accuracy like every lowered candidate, kept only where faster; bf16's candidates compete beside.

The classifier's class 3 leads every other by far more than INT8's rounding can move it
(precision_models.Classifier): quantized, its top-1 answers stay, which accuracy="top1" with tolerance 0
asks."""
import os
import sys

import pytest
import torch

import autograph
from autograph.export.calibration import INT8_CALIBRATION_INPUTS
from autograph.export.compilers.onnxruntime import int8_missing as onnxruntime_int8_missing
from autograph.export.compilers.openvino import int8_missing
from autograph._library import openvino_missing
from cpu_features import needs_vnni
from precision_models import Classifier
from stand_in_timing import evenly_profiled, timed as _timed, unprofiled

needs_int8 = pytest.mark.skipif(int8_missing() is not None, reason=f"no int8 parts: {int8_missing()}")


@pytest.fixture(scope="module")
def classifier():
    torch.manual_seed(0)
    model = Classifier().eval()
    x = torch.randn(4, 32)
    calibration = [(torch.randn(4, 32),) for _ in range(INT8_CALIBRATION_INPUTS)]
    return model, x, calibration, torch.export.export(model, (x,))


@pytest.fixture(autouse=True)
def cache(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("AUTOGRAPH_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "int8-cache"))


def test_int8_without_enough_calibration_inputs_is_an_input_error_before_any_work(classifier, monkeypatch):
    from autograph.export import optimize as export_optimize
    monkeypatch.setattr(export_optimize, "import_graph", lambda *a, **k: pytest.fail("work began"))
    model, x, calibration, ep = classifier
    for given in (None, calibration[:3]):
        with pytest.raises(autograph.InputError, match=f"pass at least {INT8_CALIBRATION_INPUTS}"):
            autograph.optimize(ep, precision="int8", calibration=given)


def test_int8_on_the_torchscript_path_says_it_is_the_export_paths(classifier):
    model, x, _, _ = classifier
    _, report = autograph.optimize(model, [x], precision="int8")
    assert report["precision"]["kept"] == "fp32" and "export path" in report["precision"]["note"]


def test_a_parts_inputs_on_each_calibration_input_are_the_values_the_program_computes_there(classifier):
    from autograph import export as export_module
    from autograph.export import parts as parts_layer
    model, x, calibration, ep = classifier
    decomposed = ep.run_decompositions({})
    graph, _, imported = export_module.aten_import.import_graph(decomposed)
    builder = parts_layer.PartBuilder(decomposed, graph, imported.value_of, imported.weights, torch.device("cpu"))
    builder.calibration = [list(c) for c in calibration[:2]]
    head = [i for i, n in enumerate(graph["nodes"]) if n["op"] == "aten::linear"][-1:]  # the last linear
    _, input_ids, _ = builder.module_of(head)
    got = builder.calibration_examples(input_ids)
    assert len(got) == 2 and len(got[0]) == 1
    with torch.no_grad():
        for (c,), (hidden,) in zip(calibration[:2], got):
            torch.testing.assert_close(hidden, torch.relu(model.features(c)))


def test_the_calibration_inputs_of_several_parts_are_read_in_one_run_of_the_graph_per_input(classifier, monkeypatch):
    from autograph import export as export_module
    from autograph.export import parts as parts_layer
    model, x, calibration, ep = classifier
    decomposed = ep.run_decompositions({})
    graph, _, imported = export_module.aten_import.import_graph(decomposed)
    builder = parts_layer.PartBuilder(decomposed, graph, imported.value_of, imported.weights, torch.device("cpu"))
    builder.calibration = [list(c) for c in calibration[:3]]
    linears = [i for i, n in enumerate(graph["nodes"]) if n["op"] == "aten::linear"]
    first, second = (builder.module_of([k])[1] for k in linears)  # the program's input; the hidden ReLU's
    runs = []
    real = parts_layer.PartBuilder.inputs_at
    monkeypatch.setattr(parts_layer.PartBuilder, "inputs_at",
                        lambda self, calls, ids: runs.append(len(calls)) or real(self, calls, ids))
    got = builder.calibration_examples_of([second, first, second])
    assert runs == [3]  # the graph run once per calibration input for both parts
    with torch.no_grad():
        for k, (c,) in enumerate(calibration[:3]):
            torch.testing.assert_close(got[1][k][0], c)
            torch.testing.assert_close(got[0][k][0], torch.relu(model.features(c)))
            torch.testing.assert_close(got[2][k][0], got[0][k][0])
    assert builder.calibration_examples(first) == got[1] and runs == [3]  # kept: not read again


@needs_int8
def test_an_int8_candidate_within_the_accuracy_asked_is_kept_and_reloads_in_a_fresh_process(classifier, monkeypatch,
                                                                                          tmp_path, fresh_python,
                                                                                          offers_bf16):
    from autograph.export.compilers.converter_process import Spare
    model, x, calibration, ep = classifier
    _timed(monkeypatch, {"whole_openvino_int8": 0.5, "whole_openvino_bf16": 1.0})
    monkeypatch.setenv("AUTOGRAPH_CACHE_DIR", str(tmp_path / "cache"))  # nothing quantized before: each quantizer runs
    taken, take = [], Spare.take  # which quantizers' processes started with the optimize got its first part

    def recorded(self, entry):
        name = self._pending._converter.name if self._pending is not None else None
        pending = take(self, entry)
        taken.append((name, pending is not None))
        return pending
    monkeypatch.setattr(Spare, "take", recorded)
    optimized, report = autograph.optimize(ep, method="sequential", precision="int8", accuracy="top1", tolerance=0.0,
                                           calibration=calibration)
    contest = report["inductor"]
    assert contest["kept"] == "whole_openvino_int8", contest
    assert ("NNCF", True) in taken, taken  # quantized by the process started with the optimize
    if onnxruntime_int8_missing() is None:
        assert ("ONNX Runtime quantizer", True) in taken, taken
    assert "whole_openvino_bf16" in contest["candidates"]  # bf16's candidates compete beside
    precision = report["precision"]
    assert precision["kept"] == "int8" and precision["judged"] == [0.0] * (1 + len(calibration))
    assert "tabulate" not in sys.modules and "nncf" not in sys.modules  # NNCF ran in its own process
    with torch.no_grad():
        got, want = optimized.module()(x), model(x)
    assert torch.equal(got.argmax(-1), want.argmax(-1)) and not torch.equal(got, want)  # INT8 rounds
    torch.export.save(optimized, tmp_path / "int8.pt2")
    torch.save({"x": x, "got": got}, tmp_path / "io.pt")
    fresh_python("import torch, autograph\n"
                 f"io = torch.load({str(tmp_path / 'io.pt')!r})\n"
                 f"m = torch.export.load({str(tmp_path / 'int8.pt2')!r}).module()\n"
                 "with torch.no_grad():\n"
                 "    assert torch.equal(m(io['x']), io['got'])\n"
                 "print('ok')\n")


@needs_int8
def test_the_whole_graphs_quantization_aims_at_the_measure_and_its_bound(classifier, monkeypatch):
    # A bound no INT8 layer meets (1e-5 of the outputs' scale; INT8 moves them about 1e-2): NNCF's accuracy
    # control, aimed at option accuracy and tolerance, returns layers to float32 until the outputs are within
    # it, so the int8 candidate meets the bound where the plain quantization (a user's function: no aim) misses.
    model, x, calibration, ep = classifier
    _timed(monkeypatch, {"whole_openvino_int8": 0.5})
    optimized, report = autograph.optimize(ep, method="sequential", precision="int8", accuracy="max_error",
                                           tolerance=1e-5, calibration=calibration, inductor=False, onnxruntime=False)
    contest = report["inductor"]
    assert contest["kept"] == "whole_openvino_int8", contest
    assert max(report["precision"]["judged"] or [contest["candidates"]["whole_openvino_int8"]["error"]]) <= 1e-5
    with torch.no_grad():
        got, want = optimized.module()(x), model(x)
    assert ((got - want).abs().max() / want.abs().max()).item() <= 1e-5

    def drop(outputs, references):  # the same bound as a user's function: nothing to aim NNCF at
        return -max(((o[0] - r[0]).abs().max() / r[0].abs().max()).item() for o, r in zip(outputs, references))
    _, report = autograph.optimize(ep, method="sequential", precision="int8", accuracy=drop, tolerance=1e-5,
                                   calibration=calibration, inductor=False, onnxruntime=False)
    assert report["inductor"]["dropped"]["whole_openvino_int8"]["why"] == "beyond tolerance"


class _Encoder(torch.nn.Module):
    """One transformer encoder layer: attention (a softmax) and layer normalizations."""

    def __init__(self, width: int = 16):
        super().__init__()
        self.qkv, self.out = torch.nn.Linear(width, 3 * width), torch.nn.Linear(width, width)
        self.norm1, self.norm2 = torch.nn.LayerNorm(width), torch.nn.LayerNorm(width)
        self.ff = torch.nn.Sequential(torch.nn.Linear(width, 2 * width), torch.nn.ReLU(), torch.nn.Linear(2 * width, width))

    def forward(self, x):
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        attention = torch.softmax(q @ k.transpose(-1, -2) / 4.0, dim=-1) @ v
        x = self.norm1(x + self.out(attention))
        return self.norm2(x + self.ff(x))


def test_a_transformers_whole_graph_is_lowered_to_int8_by_each_model_type_of_nncf():
    import types
    from autograph.export.compilers import openvino
    ops = ["aten.linear.default", "aten._softmax.default", "aten.native_layer_norm.default", "aten.add.Tensor"]
    builder = types.SimpleNamespace(graph={"nodes": [{"op": op} for op in ops]})
    whole, cut = [0, 1, 2, 3], [0, 1, 2]
    assert openvino.COMPILER.variants(builder, [whole], "int8") == ("", "transformer")
    assert openvino.COMPILER.variants(builder, [whole], "bf16") == ("",)
    assert openvino.COMPILER.variants(builder, [cut, [3]], "int8") == ("",)  # cut: one way, both types in turn
    assert openvino.model_types(builder, whole, "") == [None]  # the other type is the other candidate
    assert openvino.model_types(builder, whole, "transformer") == ["TRANSFORMER"]
    assert openvino.model_types(builder, cut, "") == [None, "TRANSFORMER"]
    assert openvino.model_types(builder, [0, 3], "") == [None]  # no attention
    plain = types.SimpleNamespace(graph={"nodes": [{"op": "aten.linear.default"}, {"op": "aten.relu.default"}]})
    assert openvino.COMPILER.variants(plain, [[0, 1]], "int8") == ("",)


@needs_int8
@pytest.mark.parametrize("faster", ["whole_openvino_int8", "whole_openvino_int8_transformer"])
def test_both_model_types_int8_compete_and_the_faster_within_the_bound_is_kept(monkeypatch, faster):
    # Neither of NNCF's model types runs a transformer faster on every model: both are candidates, judged
    # and timed side by side (the stand-in timing says which is faster); the report names each one's way.
    torch.manual_seed(0)
    model = _Encoder().eval()
    x = torch.randn(1, 8, 16)
    calibration = [(torch.randn(1, 8, 16),) for _ in range(INT8_CALIBRATION_INPUTS)]
    _timed(monkeypatch, dict({"whole_openvino_int8": 0.6, "whole_openvino_int8_transformer": 0.6}, **{faster: 0.5}))
    # A cosine loss of 0.01: INT8's ~1e-2 relative error on a layer's outputs, squared, is about 1e-4.
    optimized, report = autograph.optimize(torch.export.export(model, (x,)), method="sequential", precision="int8",
                                           accuracy="cosine", tolerance=0.01, calibration=calibration,
                                           inductor=False, onnxruntime=False)
    contest = report["inductor"]
    assert contest["kept"] == faster, contest
    for name in ("whole_openvino_int8", "whole_openvino_int8_transformer"):
        assert name in contest["candidates"], contest["dropped"].get(name)
    assert contest["candidates"]["whole_openvino_int8_transformer"]["variant"] == "transformer"
    assert "variant" not in contest["candidates"]["whole_openvino_int8"]
    with torch.no_grad():
        got, want = optimized.module()(x), model(x)
    assert torch.nn.functional.cosine_similarity(got.flatten(), want.flatten(), dim=0).item() >= 1 - 0.01


@needs_int8
def test_a_failing_quantizer_drops_the_int8_candidate_with_its_reason(classifier, monkeypatch, tmp_path):
    broken = tmp_path / "nncf-broken"
    (broken / "nncf").mkdir(parents=True)
    (broken / "nncf" / "__init__.py").write_text("raise RuntimeError('this NNCF is broken')\n")
    monkeypatch.setenv("AUTOGRAPH_NNCF_DIR", str(broken))
    monkeypatch.setenv("AUTOGRAPH_CACHE_DIR", str(tmp_path / "cache"))
    model, x, calibration, ep = classifier
    _timed(monkeypatch, {"whole_openvino_int8": 0.5})
    optimized, report = autograph.optimize(ep, method="sequential", precision="int8", accuracy="top1", tolerance=0.0,
                                           calibration=calibration)
    error = report["inductor"]["errors"]["whole_openvino_int8"]
    assert "NNCF's converter process failed" in error and "this NNCF is broken" in error, error
    assert report["inductor"]["kept"] != "whole_openvino_int8"
    with torch.no_grad():
        assert torch.equal(optimized.module()(x).argmax(-1), model(x).argmax(-1))


@pytest.mark.skipif(openvino_missing() is not None, reason=f"no OpenVINO parts: {openvino_missing()}")
def test_without_nncf_the_report_says_why_and_bf16_competes(classifier, monkeypatch, tmp_path):
    monkeypatch.setenv("AUTOGRAPH_NNCF_DIR", str(tmp_path / "no-nncf"))
    model, x, calibration, ep = classifier
    _, report = autograph.optimize(ep, method="sequential", precision="int8", calibration=calibration,
                                   inductor=False, onnxruntime=False)
    precision = report["precision"]
    assert not any(name.endswith("_int8") for name in precision["lowered"])
    assert "no compiler here lowers to int8" in precision["note"] and "NNCF" in precision["note"], precision["note"]


@pytest.mark.skipif(onnxruntime_int8_missing() is not None, reason=f"no ONNX Runtime int8: {onnxruntime_int8_missing()}")
def test_onnx_runtimes_int8_candidate_is_a_qdq_model_kept_where_faster_and_saved(classifier, monkeypatch, tmp_path):
    import onnx
    from autograph.export.compilers import onnxruntime_convert
    model, x, calibration, ep = classifier
    _timed(monkeypatch, {"whole_onnxruntime_int8": 0.5, "whole_onnxruntime": 1.0})
    optimized, report = autograph.optimize(ep, method="sequential", precision="int8", accuracy="top1", tolerance=0.0,
                                           calibration=calibration, inductor=False, openvino=False)
    contest = report["inductor"]
    assert contest["kept"] == "whole_onnxruntime_int8", contest
    assert report["precision"]["kept"] == "int8" and report["precision"]["judged"] == [0.0] * (1 + len(calibration))
    (package,) = [t for t in optimized.state_dict.values() if t.dtype == torch.uint8]
    data = package.numpy().tobytes()
    assert data.startswith(onnxruntime_convert.MAGIC)
    ops = [n.op_type for n in onnx.load_from_string(data[len(onnxruntime_convert.MAGIC):]).graph.node]
    assert "QuantizeLinear" in ops and "DequantizeLinear" in ops  # quantized, QDQ
    with torch.no_grad():
        got, want = optimized.module()(x), model(x)
    assert torch.equal(got.argmax(-1), want.argmax(-1)) and not torch.equal(got, want)  # INT8 rounds
    torch.export.save(optimized, tmp_path / "int8.pt2")
    with torch.no_grad():
        assert torch.equal(torch.export.load(tmp_path / "int8.pt2").module()(x), got)

def _kept_onnxruntime_int8(monkeypatch, model, x, calibration, accuracy: str, tolerance: float):
    """`model` optimized at int8 with ONNX Runtime's candidates alone, its INT8 timed faster: (the program,
    the report, the operator types of the kept QDQ model); asserts that model was kept."""
    import onnx
    from autograph.export.compilers import onnxruntime_convert
    _timed(monkeypatch, {"whole_onnxruntime_int8": 0.5, "whole_onnxruntime": 1.0})
    optimized, report = autograph.optimize(torch.export.export(model, (x,)), method="sequential", precision="int8",
                                           accuracy=accuracy, tolerance=tolerance, calibration=calibration,
                                           inductor=False, openvino=False)
    assert report["inductor"]["kept"] == "whole_onnxruntime_int8", report["inductor"]
    (package,) = [t for t in optimized.state_dict.values() if t.dtype == torch.uint8]
    data = package.numpy().tobytes()
    return optimized, report, [n.op_type for n in onnx.load_from_string(data[len(onnxruntime_convert.MAGIC):]).graph.node]


@pytest.mark.skipif(onnxruntime_int8_missing() is not None, reason=f"no ONNX Runtime int8: {onnxruntime_int8_missing()}")
def test_onnx_runtimes_int8_keeps_the_operations_float32_that_cost_the_measure_most_until_within_the_bound(monkeypatch):
    # The whole graph in INT8 loses the first linear's outputs (over 0.3 of the outputs' scale); aimed at the
    # built-in measure, the quantization keeps operations float32, the costliest first, until the outputs on
    # the judged inputs are within it (about 0.1 left with the first linear in float32), and the INT8 model is
    # kept: one part, QDQ, some operations still INT8.
    torch.manual_seed(0)
    model, x = _Outliers().eval(), _with_outlier(torch.randn(4, 32))
    calibration = [(_with_outlier(torch.randn(4, 32)),) for _ in range(INT8_CALIBRATION_INPUTS)]
    optimized, report, ops = _kept_onnxruntime_int8(monkeypatch, model, x, calibration, "max_error", 0.2)
    assert max(report["precision"]["judged"]) <= 0.2
    assert "DequantizeLinear" in ops  # some operations still INT8
    with torch.no_grad():
        got, want = optimized.module()(x), model(x)
    assert 0 < ((got - want).abs().max() / want.abs().max()).item() <= 0.2


class _NormThenConv1d(torch.nn.Module):
    """A layer norm over (1 channel, bins) before a 1-d convolution, as a pitch estimator's encoder starts:
    ONNX Runtime's quantizer raises on the convolution's bias (its weight-scale adjustment for INT32 biases)
    and writes per-channel scales for the norm's one-row weight that its own DequantizeLinear refuses."""

    def __init__(self):
        super().__init__()
        self.norm = torch.nn.LayerNorm([1, 32])
        self.conv = torch.nn.Conv1d(1, 4, 5, padding=2)

    def forward(self, x):
        return torch.softmax(self.conv(self.norm(x)).flatten(1), -1)


@pytest.mark.skipif(onnxruntime_int8_missing() is not None, reason=f"no ONNX Runtime int8: {onnxruntime_int8_missing()}")
def test_onnx_runtimes_int8_is_built_where_its_quantizer_fails_on_the_model_with_its_defaults(monkeypatch):
    # Without the quantizer's bias adjustment, then with one scale per weight tensor, the model quantizes
    # and runs; the cosine loss of per-tensor INT8 on these random weights stays below 0.05.
    torch.manual_seed(0)
    model, x = _NormThenConv1d().eval(), torch.randn(16, 1, 32)
    calibration = [(torch.randn(16, 1, 32),) for _ in range(INT8_CALIBRATION_INPUTS)]
    optimized, _, ops = _kept_onnxruntime_int8(monkeypatch, model, x, calibration, "cosine", 0.05)
    assert "DequantizeLinear" in ops
    with torch.no_grad():
        got, want = optimized.module()(x), model(x)
    assert torch.nn.functional.cosine_similarity(got.flatten(), want.flatten(), dim=0).item() > 0.95



def test_parts_are_quantized_at_most_at_once_in_flight_and_a_failure_waits_for_those_started():
    from autograph.export.compilers.quantized_part import in_turn
    flying, most, waited = set(), [0], []

    def start(k, fails=False):
        def begin():
            if fails:
                raise RuntimeError(f"part {k} did not start")
            flying.add(k)
            most[0] = max(most[0], len(flying))

            def wait():
                flying.discard(k)
                waited.append(k)
                return k * 10
            return wait
        return begin

    wait = in_turn([start(k) for k in range(5)], at_once=2)
    assert flying == {0, 1}  # the first two started before anything is waited for (beside other work)
    assert wait() == [0, 10, 20, 30, 40]
    assert most[0] == 2 and waited == [0, 1, 2, 3, 4]
    waited.clear()
    with pytest.raises(RuntimeError, match="part 2 did not start"):
        in_turn([start(0), start(1), start(2, fails=True), start(3)], at_once=3)()
    assert waited == [0, 1] and not flying  # those started ended; none started after the failure


def _stand_in_nncf(monkeypatch, losses):
    """NNCF's quantize and accuracy control as stand-ins: the k-th quantize returns the model with its output
    scaled by 1 + losses[k] (a relative error of losses[k] by max_error); what was called, in order."""
    import types
    import numpy as np
    import openvino.opset13 as ops
    import openvino as ov
    called = []

    def quantize(model, dataset, **recipe):
        k = sum(c == "quantize" for c in called)
        called.append("quantize")
        scaled = ops.multiply(model.get_results()[0].input_value(0),
                              ops.constant(np.float32(1.0 + losses[k])))
        nncf.made.append(ov.Model([scaled], model.get_parameters()))
        return nncf.made[-1]

    def with_accuracy_control(model, *args, **kwargs):
        called.append("accuracy control")
        return model
    params = types.ModuleType("nncf.quantization.advanced_parameters")
    params.AdvancedAccuracyRestorerParameters = lambda **kw: kw
    quantization = types.ModuleType("nncf.quantization")
    quantization.advanced_parameters = params
    nncf = types.ModuleType("nncf")
    nncf.quantization, nncf.Dataset = quantization, list
    nncf.quantize, nncf.quantize_with_accuracy_control = quantize, with_accuracy_control
    nncf.made = []  # each quantize's model, in order
    for name, module in (("nncf", nncf), ("nncf.quantization", quantization),
                         ("nncf.quantization.advanced_parameters", params)):
        monkeypatch.setitem(sys.modules, name, module)
    return nncf, called


def _matmuls(layers):
    """An OpenVINO model of `layers` MatMuls over an 8-vector, and calls of it."""
    import numpy as np
    import openvino.opset13 as ops
    import openvino as ov
    x = ops.parameter([1, 8], np.float32)
    y = x
    for k in range(layers):
        y = ops.matmul(y, ops.constant(np.eye(8, dtype=np.float32) * (1 + k % 2)), False, False)
    calls = [[np.random.default_rng(s).standard_normal((1, 8)).astype(np.float32)] for s in range(3)]
    return ov.Model([y], [x]), calls


@pytest.mark.skipif(openvino_missing() is not None, reason=f"no OpenVINO: {openvino_missing()}")
@pytest.mark.parametrize("layers, types, losses, tried", [
    (4, 1, [0.002, 0.0005], ["quantize", "quantize"]),  # the second recipe meets the bound
    (4, 1, [0.002, 0.002], ["quantize", "quantize", "accuracy control"]),
    (4, 1, [0.05, 0.0005], ["quantize", "accuracy control"]),  # missed by 50x: no second recipe
    (32, 1, [0.05, 0.0], ["quantize", "accuracy control"]),
    (33, 1, [0.05, 0.0], ["quantize"]),  # too many to rank: the parts are tried in the first quantization
    (33, 1, [0.002, 0.002], ["quantize", "quantize"]),
    # A transformer: the plain type's miss by far ends its tries, the transformer type's first recipe meets it.
    (4, 2, [0.05, 0.0005], ["quantize", "quantize"]),
    (4, 2, [0.0005], ["quantize"]),  # the plain type within the bound: the transformer type is not tried
    (4, 2, [0.002, 0.05, 0.003, 0.002], ["quantize"] * 4 + ["accuracy control"]),
])
def test_the_aimed_quantization_tries_recipes_then_accuracy_control_within_its_bounds(monkeypatch, layers, types,
                                                                                        losses, tried):
    from autograph._library import library_path
    from autograph.export.compilers import openvino_quantize
    assert openvino_quantize.MISSED_BY_AT_MOST == 4.0 and openvino_quantize.RANKED_AT_MOST == 32
    assert openvino_quantize.TRANSFORMER_TYPES == [None, "TRANSFORMER"]  # the plain type first
    nncf, called = _stand_in_nncf(monkeypatch, losses)
    model, calls = _matmuls(layers)
    returned = openvino_quantize._aimed(nncf, model, calls, calls, {"measure": "max_error", "bound": 0.001,
                                                                   "library": library_path()},
                                        [[{"type": t, "recipe": 0}, {"type": t, "recipe": 1}] for t in range(types)])
    assert called == tried
    if called[-1] == "quantize":  # within the bound, or the parts are tried in it: the last quantization made
        assert returned is nncf.made[-1]


@pytest.mark.parametrize("layers, quantizers, check_s, quantize_s, ranked", [
    (21, 48, 0.46, 9.8, False),  # fcpe's: its ranking would cost about 2.3x its quantization
    (6, 14, 0.1, 2.0, True),  # a small network: ranked within the quantization's time
    (33, 0, 0.0, 1.0, False),  # too many layers, however cheap
    (32, 10, 0.1, 1.0, True),  # at both bounds
    (32, 11, 0.1, 1.0, False),
])
def test_the_accuracy_control_ranks_only_where_ranking_costs_no_more_than_the_quantization(layers, quantizers, check_s,
                                                                                            quantize_s, ranked):
    from autograph.export.compilers import openvino_quantize
    assert openvino_quantize.RANKING_BUDGET == 1.0
    assert openvino_quantize.ranks(layers, quantizers, check_s, quantize_s) is ranked


class _Outliers(torch.nn.Module):
    """A linear over inputs whose first feature is 1000 times the others' scale (and weighs 1000 times less),
    then linears over features of one scale: INT8's one scale per tensor rounds the first linear's small
    inputs to 0 (its outputs are lost), while the others' INT8 moves theirs by about 1e-2."""

    def __init__(self):
        super().__init__()
        self.first = torch.nn.Linear(32, 64)
        with torch.no_grad():
            self.first.weight[:, 0] *= 1e-3
        self.rest = torch.nn.Sequential(torch.nn.ReLU(), torch.nn.Linear(64, 64), torch.nn.ReLU(),
                                        torch.nn.Linear(64, 64), torch.nn.ReLU(), torch.nn.Linear(64, 10))

    def forward(self, x):
        return self.rest(self.first(x))


def _with_outlier(x):
    x = x.clone()
    x[:, 0] *= 1000.0
    return x


@needs_int8
@pytest.mark.parametrize("transformer", [False, True])
def test_the_quantized_whole_graph_with_operations_turned_back_computes_as_either_precision(tmp_path, transformer):
    # openvino_revert on NNCF's quantization of a real model: every operation turned back computes as the
    # float32 package; none, as the quantized one; the first linear alone, neither. As NNCF quantizes
    # transformers, SmoothQuant scales activations one way and weights the other: both are turned back.
    import subprocess
    import numpy as np
    import openvino as ov
    from autograph.export.compilers import converter_process, openvino, openvino_convert, openvino_quantize, \
        openvino_revert, quantize_request
    torch.manual_seed(0)
    model, x = _Outliers().eval(), _with_outlier(torch.randn(4, 32))
    folder = str(tmp_path)
    path = os.path.join(folder, "float32.ovpart")
    openvino_convert.save_package(ov.convert_model(model, example_input=x), path)
    with open(path, "rb") as f:
        packages = [f.read()]
    calls = [[_with_outlier(torch.randn(4, 32)).numpy()] for _ in range(4)]
    types = ["TRANSFORMER"] if transformer else [None]
    request = b"".join(quantize_request.request(packages[0], calls, {"aim": None, "model_types": types}))
    subprocess.run(converter_process.converter_command(openvino_quantize.__file__, folder, path + ".int8"),
                   input=request, check=True, env=dict(os.environ, AUTOGRAPH_NNCF_DIR=openvino.nncf_dir()))
    with open(path + ".int8", "rb") as f:
        packages.append(f.read())
    core = ov.Core()
    xml, _ = openvino_convert.read_package(packages[1])
    assert ("nncf_smooth_quant" in xml) == transformer

    def run(package):
        xml, weights = openvino_convert.read_package(package)
        compiled = core.compile_model(core.read_model(model=xml, weights=ov.Tensor(weights)), "CPU",
                                      {"INFERENCE_PRECISION_HINT": "f32"})
        return torch.from_numpy(np.array(compiled(x.numpy())[0]))
    want, lowered = run(packages[0]), run(packages[1])
    if not transformer:  # the first linear's outputs are lost (SmoothQuant keeps some of them)
        assert (lowered - want).abs().max() > 0.2 * want.abs().max()
    # All turned back: the float32 model's operations and constants, equal up to float32's rounding (1e-5 of
    # the outputs' scale is far above it and far below INT8's error).
    assert torch.allclose(run(openvino_revert.reverted(packages[1], packages[0], lambda name: True)), want,
                          rtol=1e-5, atol=1e-5 * want.abs().max().item())
    assert torch.equal(run(openvino_revert.reverted(packages[1], packages[0], lambda name: False)), lowered)
    first = run(openvino_revert.reverted(packages[1], packages[0], lambda name: name.startswith("__module.first")))
    assert not torch.equal(first, want) and not torch.equal(first, lowered)
    if not transformer:  # about a quarter of the error is left (the other linears' INT8): half is the bound
        assert (first - want).abs().max() < 0.5 * (lowered - want).abs().max()


@needs_int8
@needs_vnni  # its parts meet the bound with VNNI (about 0.1 left); measured on AVX2 alone, one lost 0.27
@pytest.mark.parametrize("reverts, profiled", [(True, False), (False, False), (True, True)])
def test_openvinos_int8_parts_are_its_whole_graph_with_the_parts_beyond_the_bound_turned_back(monkeypatch, reverts,
                                                                                              profiled, offers_bf16):
    from autograph.export import lowering
    from autograph.export.compilers import openvino
    # The whole graph in INT8 misses the bound (its first linear's outputs are lost: over 0.3 of the outputs'
    # scale); lowered part by part, the parts are turned back to float32 in the whole graph NNCF quantized (one
    # part, never cut), and the first stays float32 while others are INT8, within the bound (about 0.1 left).
    # Where the whole graph cannot be turned back, the parts are cut and quantized one by one instead.
    if not reverts:
        def cannot(*args):
            raise ValueError("an operation not led back to the graph")
        monkeypatch.setattr(openvino, "revert", cannot)
    torch.manual_seed(0)
    model, x = _Outliers().eval(), _with_outlier(torch.randn(4, 32))
    calibration = [(_with_outlier(torch.randn(4, 32)),) for _ in range(INT8_CALIBRATION_INPUTS)]
    _timed(monkeypatch, {"whole_openvino_int8": 0.5, "whole_openvino_bf16": 3.0, "parts_openvino_int8": 1.0})
    if profiled:  # every part faster in INT8, slower in bf16 (the medians above): bf16 is on no part's
        evenly_profiled(monkeypatch)  # ladder, and the whole graph is still turned back, not cut
    else:
        unprofiled(monkeypatch)  # every part as fast in INT8 as its whole graph: each is tried
    monkeypatch.setattr(lowering, "PARTS", 2)  # its 7 operators: two parts (the first linear's, the others')

    def drop(outputs, references):  # a user's function: NNCF's quantization is not aimed at it
        return -max(((o[0] - r[0]).abs().max() / r[0].abs().max()).item() for o, r in zip(outputs, references))
    optimized, report = autograph.optimize(torch.export.export(model, (x,)), method="sequential", precision="int8",
                                           accuracy=drop, tolerance=0.2, calibration=calibration, inductor=False,
                                           onnxruntime=False)
    contest = report["inductor"]
    assert contest["dropped"]["whole_openvino_int8"]["why"] == "beyond tolerance", contest
    assert contest["kept"] == "parts_openvino_int8", contest
    entry = contest["candidates"]["parts_openvino_int8"]
    assert entry["parts"] == (1 if reverts else 2) and entry["error"] <= 0.2
    precisions = [p["precision"] for p in entry["parts_precision"]]
    assert precisions[0] == "fp32" and "int8" in precisions, entry["parts_precision"]
    with torch.no_grad():
        got, want = optimized.module()(x), model(x)
    assert 0 < ((got - want).abs().max() / want.abs().max()).item() <= 0.2

