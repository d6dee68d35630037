"""Option accuracy: a lowered candidate judged by the user's accuracy measure rather than the largest
relative error (export/measure.py, the gate in export/contest.py; the built-ins are the C++ library's,
core/output_error.h, which the TorchScript path judges by too).

The model is a classifier whose class 3 leads every other by far more than bfloat16's rounding (2^-8 of
the logits' scale) can move it: computed in bfloat16 its top-1 answer never changes, while its logits
move by ~1e-3 of their scale, which a max_error tolerance of 1e-6 refuses."""
import math

import pytest
import torch

import autograph
from autograph._library import openvino_missing
from cpu_features import needs_bf16_cpu
from precision_models import Classifier
from stand_in_timing import timed as _timed

needs_openvino = pytest.mark.skipif(openvino_missing() is not None, reason=f"no OpenVINO parts: {openvino_missing()}")


@pytest.fixture(scope="module")
def classifier():
    torch.manual_seed(0)
    model = Classifier().eval()
    x = torch.randn(4, 32)
    calibration = [(torch.randn(4, 32),) for _ in range(2)]
    return model, x, calibration, torch.export.export(model, (x,))


@pytest.fixture(autouse=True)
def cache(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("AUTOGRAPH_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "measure-cache"))


def test_the_builtin_measures_are_the_c_libraries():
    from autograph.export.measure import measured
    want = [[torch.tensor([[0.0, 1.0, 0.0], [2.0, 0.0, 0.0]])], [torch.tensor([[0.0, 1.0, 0.0], [2.0, 0.0, 0.0]])]]
    got = [[torch.tensor([[0.0, 1.0, 0.0], [0.0, 0.0, 3.0]])], [want[1][0] * 5]]
    assert measured("top1", got, want) == (0.25, [0.5, 0.0])  # one row of four, over both inputs
    loss, per_input = measured("sqnr", [[torch.tensor([3.0, 5.0])]], [[torch.tensor([3.0, 4.0])]])
    assert loss == pytest.approx(1 / 25) and per_input == pytest.approx([1 / 25])


def test_a_function_measure_loses_its_scores_drop_and_its_faults_are_input_errors():
    from autograph.export.measure import measured

    def agreement(outputs, reference):
        rows = [(o[0].argmax(-1) == r[0].argmax(-1)).float() for o, r in zip(outputs, reference)]
        return torch.cat(rows).mean()

    want = [[torch.tensor([[0.0, 1.0], [1.0, 0.0]])]]
    assert measured(agreement, [[torch.tensor([[0.0, 1.0], [0.0, 1.0]])]], want) == (0.5, [0.5])
    with pytest.raises(autograph.InputError, match=r"option accuracy: .*broken\(outputs, float32 outputs\) failed: "
                                                   r"ZeroDivisionError"):
        measured(lambda *_: 1 / 0, want, want) if False else measured(_broken, want, want)
    loss, _ = measured(lambda outputs, reference: float("nan"), want, want)
    assert math.isnan(loss)  # a score that is no number is beyond any tolerance


def _broken(outputs, reference):
    return 1 / 0


def _accuracy(outputs, labels):
    """Top-1 accuracy against labels: each label a tensor of the rows' classes."""
    return torch.cat([(o[0].argmax(-1) == label).float() for o, label in zip(outputs, labels)]).mean()


def test_a_labelled_measure_loses_its_scores_drop_from_float32s_on_the_calibration_inputs():
    from autograph.export.measure import judged_inputs, measured
    example = [torch.tensor([[9.0, 0.0]])]  # unlabelled: not judged (a wrong answer here would count)
    want = [example, [torch.tensor([[0.0, 1.0], [1.0, 0.0]])], [torch.tensor([[0.0, 1.0], [0.0, 1.0]])]]
    got = [[torch.tensor([[0.0, 9.0]])], want[1], [torch.tensor([[1.0, 0.0], [0.0, 1.0]])]]
    measure = autograph.labelled(_accuracy, [torch.tensor([1, 0]), torch.tensor([1, 1])])
    assert measured(measure, got, want) == (0.25, [0.0, 0.5])  # float32 4/4 right, the candidate 3/4
    measure = autograph.labelled(_accuracy, [torch.tensor([1, 1]), torch.tensor([1, 1])])  # float32 wrong once too
    assert measured(measure, got, want) == (0.25, [0.0, 0.5])
    assert measured(measure, want, want) == (0.0, [0.0, 0.0])
    assert judged_inputs(measure, 2) == 2 and judged_inputs("top1", 2) == 3
    with pytest.raises(autograph.InputError, match=r"_broken\(outputs, labels\) failed: ZeroDivisionError"):
        measured(autograph.labelled(_broken, [0, 0]), got, want)
    with pytest.raises(autograph.InputError, match="one label per calibration input"):
        autograph.labelled(_accuracy, torch.tensor([1, 0]))


def test_labels_not_one_per_calibration_input_are_an_input_error_before_any_work(classifier, monkeypatch):
    from autograph.export import optimize as export_optimize
    monkeypatch.setattr(export_optimize, "import_graph", lambda *a, **k: pytest.fail("work began"))
    model, x, calibration, ep = classifier
    measure = autograph.labelled(_accuracy, [torch.tensor([3] * 4)] * (len(calibration) + 1))
    with pytest.raises(autograph.InputError, match=f"3 labels for {len(calibration)} calibration inputs"):
        autograph.optimize(ep, precision="bf16", accuracy=measure, calibration=calibration)
    with pytest.raises(autograph.InputError, match="export path only"):
        autograph.optimize(model, [x], precision="bf16", accuracy=measure, calibration=calibration)


@needs_openvino
def test_a_labelled_measure_judges_the_candidates_on_the_calibration_inputs_alone(classifier, monkeypatch, offers_bf16):
    model, x, calibration, ep = classifier
    seen = []

    def accuracy(outputs, labels):
        seen.append(len(outputs))
        return _accuracy(outputs, labels)

    with torch.no_grad():  # the labels float32 answers, but for one row it gets wrong: the drop is what counts
        labels = [model(c).argmax(-1) for (c,) in calibration]
    labels[0][0] = (labels[0][0] + 1) % 10
    _timed(monkeypatch, {"whole_openvino_bf16": 1.0})
    _, report = autograph.optimize(ep, method="sequential", precision="bf16", tolerance=0.0,
                                   accuracy=autograph.labelled(accuracy, labels), calibration=calibration)
    assert report["inductor"]["kept"] == "whole_openvino_bf16", report["inductor"]
    precision = report["precision"]
    assert precision["accuracy"] == "accuracy" and precision["judged"] == [0.0, 0.0]
    assert precision["judged_inputs"] == 2 and set(seen) <= {1, 2} and 2 in seen


def test_an_unknown_measure_is_an_input_error_before_any_work(classifier, monkeypatch):
    from autograph.export import optimize as export_optimize
    monkeypatch.setattr(export_optimize, "import_graph", lambda *a, **k: pytest.fail("work began"))
    model, x, _, ep = classifier
    with pytest.raises(autograph.InputError, match="option 'accuracy'"):
        autograph.optimize(ep, precision="bf16", accuracy="top5")
    with pytest.raises(autograph.InputError, match="option 'accuracy'"):
        autograph.Settings(accuracy="top5")


def test_a_function_measure_on_the_torchscript_path_is_an_input_error_before_tracing(classifier, monkeypatch):
    from autograph import api
    monkeypatch.setattr(api, "to_script_module", lambda *a, **k: pytest.fail("tracing began"))
    model, x, _, _ = classifier
    with pytest.raises(autograph.InputError, match="export path only"):
        autograph.optimize(model, [x], precision="bf16", accuracy=lambda outputs, reference: 1.0)


@needs_openvino
@needs_bf16_cpu
def test_a_bf16_candidate_beyond_max_error_but_within_top1_is_kept_and_each_judged_input_reported(classifier,
                                                                                                  monkeypatch):
    model, x, calibration, ep = classifier
    _timed(monkeypatch, {"whole_openvino_bf16": 1.0})
    _, report = autograph.optimize(ep, method="sequential", precision="bf16", tolerance=1e-6, calibration=calibration)
    assert report["inductor"]["dropped"]["whole_openvino_bf16"]["why"] == "beyond tolerance"
    optimized, report = autograph.optimize(ep, method="sequential", precision="bf16", tolerance=0.0, accuracy="top1",
                                           calibration=calibration)
    contest = report["inductor"]
    assert contest["kept"] == "whole_openvino_bf16", contest
    assert contest["candidates"]["whole_openvino_bf16"]["measured"] == [0.0, 0.0, 0.0]
    precision = report["precision"]
    assert precision["accuracy"] == "top1" and precision["judged"] == [0.0, 0.0, 0.0]
    assert precision["kept"] == "bf16" and precision["error"] == 0.0 and precision["judged_inputs"] == 3
    with torch.no_grad():
        assert torch.equal(optimized.module()(x).argmax(-1), model(x).argmax(-1))


@needs_openvino
def test_a_function_measure_judges_the_candidates_and_names_itself_in_the_report(classifier, monkeypatch, offers_bf16):
    model, x, calibration, ep = classifier
    calls = []

    def top1_agreement(outputs, reference):
        calls.append(len(outputs))
        return torch.cat([(o[0].argmax(-1) == r[0].argmax(-1)).float() for o, r in zip(outputs, reference)]).mean()

    _timed(monkeypatch, {"whole_openvino_bf16": 1.0})
    _, report = autograph.optimize(ep, method="sequential", precision="bf16", tolerance=0.0, accuracy=top1_agreement,
                                   calibration=calibration)
    assert report["inductor"]["kept"] == "whole_openvino_bf16"
    assert report["precision"]["accuracy"] == "top1_agreement" and report["precision"]["judged"] == [0.0, 0.0, 0.0]
    assert 3 in calls  # over the example and both calibration inputs at once


@needs_openvino
@needs_bf16_cpu
def test_a_candidate_beyond_the_measures_tolerance_stays_out_and_says_by_which_measure(classifier, monkeypatch):
    _, x, calibration, ep = classifier
    _timed(monkeypatch, {"whole_openvino_bf16": 0.5, "whole_openvino": 1.0})
    _, report = autograph.optimize(ep, method="sequential", precision="bf16", tolerance=1e-12, accuracy="cosine",
                                   calibration=calibration)
    dropped = report["inductor"]["dropped"]["whole_openvino_bf16"]
    assert dropped["why"] == "beyond tolerance" and "by accuracy measure cosine over 3 judged inputs" in dropped["detail"]
    assert report["inductor"]["kept"] == "whole_openvino" and report["precision"]["kept"] == "fp32"


def test_the_torchscript_path_judges_by_the_measure_named(classifier):
    model, x, calibration, _ = classifier
    _, report = autograph.optimize(model, [x], precision="bf16", accuracy="top1", calibration=calibration)
    precision = report["precision"]
    assert precision["accuracy"] == "top1"
    if precision["error"] is not None and precision["error"] >= 0:  # a lowered plan was judged
        assert len(precision["judged"]) == 3 and precision["error"] == 0.0, precision
