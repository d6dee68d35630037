"""A QDQ model of ONNX Runtime's static quantization with chosen operations turned back to float32
(export/compilers/qdq_in_float.py), by which ONNX Runtime's aimed INT8 ranks its operations.

Tolerance: with every operation turned back the model computes as the float32 model it was quantized from,
in ONNX Runtime's float32 kernels on both sides (reordered sums: below 1e-5 of the outputs' scale); INT8
activations move these outputs by over 1e-3 of their scale, and a ReLU folded into its convolution's
quantization but not applied again by far more (its consumer would read the negative values)."""
import runpy
from pathlib import Path

import numpy as np
import pytest
import torch

from autograph.export.compilers.onnxruntime import int8_missing

pytestmark = pytest.mark.skipif(int8_missing() is not None, reason=f"no ONNX Runtime int8: {int8_missing()}")

COMPILERS = Path(__file__).resolve().parents[2] / "python" / "autograph" / "export" / "compilers"


class _ConvReluNorm(torch.nn.Module):
    """Convolutions whose ReLU the quantizer folds into their outputs' quantization, a batch normalization and
    a linear layer reading them: weights, biases and activations all quantized."""

    def __init__(self):
        super().__init__()
        self.conv1, self.norm = torch.nn.Conv1d(2, 8, 5, padding=2), torch.nn.BatchNorm1d(8)
        self.conv2, self.linear = torch.nn.Conv1d(8, 8, 3, padding=1), torch.nn.Linear(8 * 32, 10)

    def forward(self, x):
        y = torch.relu(self.conv2(self.norm(torch.relu(self.conv1(x)))))
        return self.linear(y.reshape(y.shape[0], -1))


@pytest.fixture(scope="module")
def quantized(tmp_path_factory):
    """(the float32 ONNX model's path, the QDQ model's path, an input) of _ConvReluNorm with trained-like
    statistics in its normalization."""
    from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType, quantize_static
    torch.manual_seed(0)
    model = _ConvReluNorm().eval()
    with torch.no_grad():
        model.norm.running_mean.uniform_(0.0, 0.5)
        model.norm.running_var.uniform_(0.5, 2.0)
    folder = tmp_path_factory.mktemp("qdq")
    original, quantized = str(folder / "float.onnx"), str(folder / "int8.onnx")
    x = torch.randn(2, 2, 32)
    torch.onnx.export(model, (x,), original, input_names=["x"], dynamo=False)
    calls = iter([{"x": torch.randn(2, 2, 32).numpy()} for _ in range(8)])

    class Reader(CalibrationDataReader):
        def get_next(self):
            return next(calls, None)
    quantize_static(original, quantized, Reader(), quant_format=QuantFormat.QDQ, per_channel=True,
                    activation_type=QuantType.QUInt8, weight_type=QuantType.QInt8)
    return original, quantized, x.numpy()


def _run(model, x):
    import onnxruntime as ort
    return ort.InferenceSession(model, providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]


def _in_float(original, quantized):
    import onnx
    return runpy.run_path(str(COMPILERS / "qdq_in_float.py"))["InFloat"](onnx.load(quantized), onnx.load(original))


def _scaled(got, want):
    return float(np.abs(got - want).max() / np.abs(want).max())


def test_every_operation_turned_back_computes_as_the_float32_model(quantized):
    import onnx
    original, path, x = quantized
    in_float = _in_float(original, path)
    ops = [n.name for n in onnx.load(original).graph.node]
    folded = [op for op in ops if not in_float.covers(op)]
    assert folded and all("Relu" in op for op in folded), folded  # the quantizer folds them
    want = _run(original, x)
    assert _scaled(_run(path, x), want) > 1e-3  # INT8 as it is
    assert _scaled(_run(in_float.model([op for op in ops if in_float.covers(op)]), x), want) <= 1e-5


def test_turning_back_one_operation_changes_only_what_it_computes_and_leaves_the_model_as_it_was(quantized):
    import onnx
    original, path, x = quantized
    quantized_model = onnx.load(path)
    in_float = runpy.run_path(str(COMPILERS / "qdq_in_float.py"))["InFloat"](quantized_model, onnx.load(original))
    before = quantized_model.SerializeToString()
    np.testing.assert_array_equal(_run(in_float.model([]), x), _run(path, x))
    (norm,) = [n.name for n in onnx.load(original).graph.node if n.op_type == "BatchNormalization"]
    want, int8 = _run(original, x), _run(path, x)
    # The normalization in float32 reads the ReLU's float32 outputs (applied again): its outputs change, and
    # their largest error is no larger than INT8's (equal where the largest sits in the linear layer's INT8,
    # as on a CPU with VNNI); without the ReLU it would read the negative values and move them far more.
    turned_back = _run(in_float.model([norm]), x)
    assert not np.array_equal(turned_back, int8)
    assert _scaled(turned_back, want) <= _scaled(int8, want)
    assert quantized_model.SerializeToString() == before
    assert in_float.model(["no such operation"]) is None


def _aimed(quantized, tmp_path, broken_stand_in):
    """ONNX Runtime's aimed quantization (onnxruntime_quantize._aimed) of the fixture's model at half the
    least loss of its operations in float32 one at a time (no one alone meets it): (the operations in float32 of each quantization it ran, the loss of the model it left,
    the bound)."""
    import os
    from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType, quantize_static
    original, path, x = quantized
    module = runpy.run_path(str(COMPILERS / "onnxruntime_quantize.py"))
    if broken_stand_in:  # ONNX Runtime refuses every model the stand-in writes
        stand_in = module["_stand_in"]
        module["_aimed"].__globals__["_stand_in"] = lambda *args: type(
            "Broken", (), {"covers": stand_in(*args).covers, "model": lambda self, ops: b"not a model"})()
    rng = np.random.default_rng(0)
    feeds = [{"x": rng.standard_normal((2, 2, 32)).astype(np.float32)} for _ in range(4)]
    out, quantizations = str(tmp_path / "aimed.onnx"), []

    def quantize(in_float):
        calls = iter(feeds)

        class Reader(CalibrationDataReader):
            def get_next(self):
                return next(calls, None)
        quantizations.append(list(in_float))
        quantize_static(original, out, Reader(), quant_format=QuantFormat.QDQ, per_channel=True,
                        activation_type=QuantType.QUInt8, weight_type=QuantType.QInt8, nodes_to_exclude=list(in_float))
        return out
    loss_of = runpy.run_path(str(COMPILERS / "quantize_aim.py"))["loss_by"]({
        "measure": "max_error", "library": os.environ["AUTOGRAPH_LIBRARY"]})
    want = [[_run(original, f["x"])] for f in feeds]
    import onnx
    ranked = [n.name for n in onnx.load(original).graph.node if n.op_type in ("Conv", "BatchNormalization", "Gemm")]
    bound = min(loss_of([[_run(quantize([op]), f["x"])] for f in feeds], want) for op in ranked) / 2
    quantizations.clear()
    module["_aimed"](original, quantize, feeds, {"measure": "max_error", "bound": bound,
                                                 "library": os.environ["AUTOGRAPH_LIBRARY"]})
    return quantizations, loss_of([[_run(out, f["x"])] for f in feeds], want), bound


def test_the_aimed_quantization_ranks_on_the_stand_in_and_quantizes_only_what_it_keeps(quantized, tmp_path):
    # Four operations to rank (the reshape only moves values), none within the bound alone: quantized again
    # per operation, the aim would quantize at least five times; on the stand-in, the first quantization and
    # those of the tries estimated within the bound.
    quantizations, loss, bound = _aimed(quantized, tmp_path, broken_stand_in=False)
    assert loss <= bound and quantizations[-1]
    assert len(quantizations) < 5, quantizations
    # Where ONNX Runtime refuses what the stand-in writes, every try is quantized, to the same end.
    quantizations, loss, bound = _aimed(quantized, tmp_path, broken_stand_in=True)
    assert loss <= bound and len(quantizations) >= 5, quantizations
