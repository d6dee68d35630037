"""How the export path judges a compiled candidate's outputs (python/autograph/candidate_check.py) and
what its report says of every candidate (export._with_compiled_parts).

The reference is the plan on ATen's kernels in full float32 precision; a candidate may be
max(FLOOR, FACTOR x the plan's own error under the user's settings) of each output's scale from it,
integer outputs exactly equal. On the CPU nothing rounds by default (the user's error is 0 and the
bound is the floor); the switches that would round (TF32, oneDNN's bfloat16) are settings that can be
set and read without a GPU. The end-to-end tests stand in for Inductor's candidates (no compile):
programs of the same graph, one on doubled weights (wrong by order 1), and stand-in timings."""
import json
import math
import warnings

import pytest
import torch

import autograph
from autograph.export import check as candidate_check
from autograph import export as export_module
from autograph.export.candidate import Candidate, JustInTime
from autograph.export.plans import Program

FLOOR, FACTOR = candidate_check.FLOOR, candidate_check.FACTOR


def _moved(t: torch.Tensor, relative: float) -> torch.Tensor:
    """`t` with its first element moved by `relative` of its scale."""
    out = t.clone()
    out.view(-1)[0] += relative * t.abs().max()
    return out


def test_a_candidate_off_by_5e_3_is_wrong_at_full_precision_and_right_within_the_users_rounding():
    torch.manual_seed(0)
    want = torch.randn(4, 8)
    got = _moved(want, 5e-3)
    error, why, bound = candidate_check.Reference([want]).judge([got], "the plan")
    assert error == pytest.approx(5e-3, rel=1e-4) and bound == FLOOR
    assert why.startswith("output 0 is") and "from the plan's" in why and "tolerance 0.001 of the scale" in why
    # The plan's own run under the user's settings is 2e-3 from the reference: the bound is FACTOR x that.
    reference = candidate_check.Reference([want], [_moved(want, -2e-3)])
    assert reference.user_errors == [pytest.approx(2e-3, rel=1e-4)]
    assert reference.bounds == [pytest.approx(FACTOR * 2e-3, rel=1e-4)]
    error, why, bound = reference.judge([got], "the plan")
    assert why is None and bound is None and error == pytest.approx(5e-3, rel=1e-4)
    assert reference.judge([2 * want], "the plan")[1] is not None  # a wrong wiring stays wrong
    assert reference.summary() == {"reduced_precision": True, "user_error": 0.002, "bound": 0.008}
    # A user's error below FLOOR / FACTOR leaves the floor.
    assert candidate_check.Reference([want], [_moved(want, 1e-4)]).bounds == [FLOOR]
    assert candidate_check.Reference([want]).summary() == {"reduced_precision": False, "user_error": 0.0,
                                                           "bound": FLOOR}


def test_an_output_far_below_one_is_judged_by_its_own_scale_and_one_of_zeros_by_the_difference():
    # Random-weight networks whose activations shrink layer by layer give outputs of scale 1e-14: an error
    # of 2 % of that scale is 2 %, whatever the scale, and misses a tolerance of 1 %.
    torch.manual_seed(0)
    want = 1e-14 * torch.randn(1, 1000)
    got = _moved(want, 0.02)
    error, why, bound = candidate_check.Reference([want]).judge([got], "the plan", tolerance=0.01)
    assert error == pytest.approx(0.02, rel=1e-3) and why is not None and bound == 0.01
    assert candidate_check.relative_error(got, want) == pytest.approx(0.02, rel=1e-3)
    # An output of zeros (a head initialized to zero): the difference itself, exact zeros within any bound.
    zeros = torch.zeros(8)
    assert candidate_check.Reference([zeros]).judge([zeros.clone()], "the plan", tolerance=0.01)[:2] == (0.0, None)
    off = zeros.clone()
    off[2] = 0.5
    error, why, _ = candidate_check.Reference([zeros]).judge([off], "the plan", tolerance=0.01)
    assert error == 0.5 and why is not None


def test_nan_is_never_within_the_bound_and_integer_outputs_are_exact():
    torch.manual_seed(0)
    want = torch.randn(16)
    generous = candidate_check.Reference([want], [_moved(want, 0.05)])  # bound 0.2
    nan = want.clone()
    nan[3] = float("nan")
    error, why, bound = generous.judge([nan], "the plan")
    assert math.isnan(error) and why is not None and bound == pytest.approx(FACTOR * 0.05, rel=1e-4)
    assert generous.judge([_moved(want, 0.1)], "the plan")[1] is None
    # A NaN in the user's run does not widen the bound.
    assert candidate_check.Reference([want], [nan]).bounds == [FLOOR]

    ints = torch.arange(10)
    off = ints.clone()
    off[3] += 1
    for reference in (candidate_check.Reference([ints]), candidate_check.Reference([ints], [off])):
        assert reference.bounds == [0.0]
        assert reference.judge([ints.clone()], "the plan")[:2] == (0.0, None)
        error, why, bound = reference.judge([off], "the plan")
        assert why == "output 0 differs from the plan's" and bound == 0.0 and error == pytest.approx(1 / 9)
    # Outputs of another shape or dtype, and a candidate's outputs that are some of the plan's.
    assert "is (4,) torch.float32" in candidate_check.Reference([want]).judge([want[:4]], "the plan")[1]
    both = candidate_check.Reference([want, ints])
    assert both.judge([ints], "the plan", positions=[1])[1] is None
    assert both.judge([off], "the plan", positions=[1])[1] == "output 0 differs from the plan's"
    assert candidate_check.bound_of(torch.float16, 0.0) == 8 * torch.finfo(torch.float16).eps


def _read(getter):
    try:
        return getter()
    except RuntimeError:  # legacy and new switches mixed: torch refuses to read the legacy flag
        return None


def _precision_settings():
    switches = {(b, op): torch._C._get_fp32_precision_getter(b, op)
                for b in ("generic", "cuda", "mkldnn") for op in ("all", "matmul", "conv", "rnn")
                if b != "generic" or op == "all"}
    return (switches, _read(torch._C._get_cublas_allow_tf32), _read(torch._C._get_cudnn_allow_tf32),
            _read(torch._C._get_float32_matmul_precision))


_SWITCHES = (("generic", "all"), ("cuda", "all"), ("mkldnn", "all"), ("cuda", "matmul"), ("cuda", "conv"),
             ("cuda", "rnn"), ("mkldnn", "matmul"), ("mkldnn", "conv"), ("mkldnn", "rnn"))


@pytest.fixture
def user_precision():
    """The precision settings as this process had them (torch's defaults), given back after the test."""
    matmul, cudnn = torch.get_float32_matmul_precision(), torch.backends.cudnn.allow_tf32
    switches = {s: torch._C._get_fp32_precision_getter(*s) for s in _SWITCHES}
    yield
    torch.set_float32_matmul_precision(matmul)
    torch.backends.cudnn.allow_tf32 = cudnn
    for switch, value in switches.items():
        torch._C._set_fp32_precision_setter(*switch, value)


@pytest.mark.parametrize("device", ["cuda", "cpu"])
def test_full_precision_turns_rounding_off_and_gives_the_settings_back_when_the_body_raises(device,
                                                                                           user_precision):
    torch.set_float32_matmul_precision("medium")  # cuBLAS: TF32, oneDNN's matmuls: bfloat16
    torch.backends.mkldnn.conv.fp32_precision = "bf16"
    before = _precision_settings()
    assert len(candidate_check.reduced_switches(device)) == (3 if device == "cuda" else 2)
    with pytest.raises(RuntimeError, match="the body failed"):
        with candidate_check.full_precision(torch.device(device)) as changed:
            assert changed and candidate_check.reduced_switches(device) == []
            inside = _precision_settings()
            raise RuntimeError("the body failed")
    assert _precision_settings() == before
    if device == "cuda":  # the legacy flags follow, as torch checks them against the switches
        assert inside[1:] == (False, False, "highest")
    # A user who mixed the legacy and new switches gets the same mix back.
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cudnn.fp32_precision = "tf32"
    before = _precision_settings()
    with candidate_check.full_precision(torch.device(device)) as changed:
        assert changed and candidate_check.reduced_switches(device) == []
    assert _precision_settings() == before


def test_nothing_is_touched_or_run_again_where_nothing_rounds(user_precision):
    runs = []

    def in_full():
        runs.append(candidate_check.reduced_switches("cpu"))
        return [torch.full((3,), 1.001)]

    user = [torch.ones(3)]
    before = _precision_settings()
    assert candidate_check.reduced_switches("cpu") == []
    with candidate_check.full_precision(torch.device("cpu")) as changed:
        assert not changed and _precision_settings() == before
    reference = candidate_check.reference_of(user, torch.device("cpu"), in_full)
    assert runs == [] and not reference.reduced and reference.outputs == user and reference.bounds == [FLOOR]
    torch.backends.mkldnn.matmul.fp32_precision = "bf16"
    reference = candidate_check.reference_of(user, torch.device("cpu"), in_full)
    assert runs == [[]] and reference.reduced and reference.user_errors == [pytest.approx(1e-3 / 1.001, rel=1e-4)]
    assert candidate_check.reduced_switches("cpu") == [("mkldnn", "matmul")]


@pytest.fixture(scope="module")
def tiny():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 4)).eval()
    x = torch.randn(2, 8)
    with torch.no_grad():
        want = model(x)
    return x, want, torch.export.export(model, (x,))


def _stand_ins(monkeypatch, ms, jit_warns=False):
    """Inductor's candidates replaced without compiling: "plan" (the graph planned again), "whole" (a
    JustInTime callable running the same program; `jit_warns`: it warns as a failed CUDA Graph
    capture does), "whole_unfrozen" (the plan on doubled weights: wrong) and "whole_openvino" (failed
    to build); each candidate's median ms from `ms`."""

    def candidates(builder, graph, program, weights, tensors, settings, ready=None):
        plan, plan_report = export_module.plans.plan(graph, weights + tensors, export_module.plans.replaced(settings, method="sequential"))
        users = [v for v, is_weight in zip(graph["inputs"], graph["weights"]) if not is_weight]
        inputs = [v for v, is_weight in zip(graph["inputs"], graph["weights"]) if is_weight] + users

        def call(*passed):
            if jit_warns:
                warnings.warn("autograph: capturing a CUDA Graph failed (stand-in); inputs of this shape and type "
                              "run without a graph from now on")
            return torch.ops.autograph.execute(list(passed), program)

        built = {"plan": Program(plan, weights, plan_report, 2),
                 "whole_unfrozen": Program(program, [2 * w for w in weights], {}, 1)}
        if "whole" in ms:
            built["whole"] = JustInTime(call, inputs, list(graph["outputs"]), [], "whole part 1/1", True)
        inductor = export_module.compilers.inductor.COMPILER  # what they stand for, as data on each
        made = {name: Candidate.of(name, b, compiler=inductor, kind=name) for name, b in built.items()}
        made["whole_openvino"] = Candidate.failed("whole_openvino", RuntimeError("the stand-in conversion failed"))
        return made, 0

    monkeypatch.setattr(export_module.contest, "compiled_candidates", candidates)
    monkeypatch.setattr(export_module.contest, "_time_candidates",
                        lambda candidates, tensors, graph, rounds=10, **_: {n: ms[n] for n in candidates})


def test_the_report_lists_every_candidate_with_its_error_and_time_or_why_it_was_dropped(tiny, monkeypatch):
    x, want, ep = tiny
    _stand_ins(monkeypatch, {"aten": 2.0, "plan": 1.0, "whole": 3.0}, jit_warns=True)
    with pytest.warns(UserWarning, match="capturing a CUDA Graph failed"):  # shown to the user as well
        optimized, report = autograph.optimize(ep, method="sequential", openvino=False, onnxruntime=False)
    summary = report["inductor"]
    json.dumps(summary, allow_nan=False)
    assert summary["kept"] == "plan" and report["chosen"].startswith("inductor plan")
    assert set(summary["candidates"]) == {"aten", "plan", "whole"}
    assert set(summary["dropped"]) == {"aten", "whole", "whole_unfrozen", "whole_openvino"}
    for name, entry in summary["candidates"].items():  # the same kernels on the same inputs: no error
        assert entry["error"] == 0.0 and entry["median_ms"] == {"aten": 2.0, "plan": 1.0, "whole": 3.0}[name]
    assert summary["candidates"]["plan"]["streams"] == 1 and summary["candidates"]["plan"]["cuda_graph"] is False
    assert summary["reference"] == {"reduced_precision": False, "user_error": 0.0, "bound": FLOOR}
    wrong = summary["dropped"]["whole_unfrozen"]
    assert wrong["why"] == "wrong output" and wrong["bound"] == FLOOR and wrong["error"] > 0.1
    assert "from the plan's" in wrong["detail"] and summary["errors"]["whole_unfrozen"] == wrong["detail"]
    assert summary["dropped"]["whole_openvino"] == {"why": "not built",
                                                    "detail": "RuntimeError: the stand-in conversion failed"}
    assert summary["dropped"]["aten"] == {"why": "slower", "median_ms": 2.0}
    assert summary["dropped"]["whole"] == {"why": "slower", "median_ms": 3.0}
    assert summary["warnings"] == [{"candidate": "whole", "message": "UserWarning: autograph: capturing a CUDA "
                                    "Graph failed (stand-in); inputs of this shape and type run without a graph "
                                    "from now on"}]
    got = optimized.module()(x)
    assert (got - want).abs().max().item() <= 1e-5 * want.abs().max().item()


def test_where_the_users_settings_round_the_reference_is_planned_apart_without_a_cuda_graph(tiny, monkeypatch,
                                                                                          user_precision):
    x, want, ep = tiny
    _stand_ins(monkeypatch, {"aten": 1.0, "plan": 2.0})
    plans = []
    plan = export_module.plans.plan
    monkeypatch.setattr(export_module.plans, "plan", lambda graph, tensors, settings: plans.append(
        (settings.method, settings.cuda_graph, candidate_check.reduced_switches("cpu"))) or plan(
        graph, tensors, settings))
    torch.set_float32_matmul_precision("medium")  # oneDNN's matmuls may round to bfloat16
    before = _precision_settings()
    optimized, report = autograph.optimize(ep, method="sequential", openvino=False, onnxruntime=False)
    assert _precision_settings() == before
    summary = report["inductor"]
    # The reference's plan: one operator at a time, no CUDA Graph, nothing rounding.
    assert ("sequential", False, []) in plans
    assert summary["reference"]["reduced_precision"] is True
    reference = summary["reference"]  # bfloat16 rounds only on CPUs that have it
    assert reference["user_error"] >= 0.0
    assert reference["bound"] == pytest.approx(max(FLOOR, FACTOR * reference["user_error"]), rel=1e-2)
    assert summary["kept"] == "aten" and summary["dropped"]["plan"] == {"why": "slower", "median_ms": 2.0}
    assert summary["candidates"]["aten"]["error"] == summary["reference"]["user_error"]
    assert summary["dropped"]["whole_unfrozen"]["why"] == "wrong output" and "whole" not in summary["candidates"]
