"""Which precision the contest keeps (export/kept_precision.py): a candidate below float32 only where it is
clearly faster than the fastest float32 one, and the report's word on it."""
from types import SimpleNamespace

from autograph.export.kept_precision import LOWERED_GAIN, float32_at_a_tie, precision_entry
from autograph.settings import Settings


def _candidates(**precisions):
    return {name: SimpleNamespace(lowered=p != "fp32", precision=p, entry={}, competing=True)
            for name, p in precisions.items()}


def test_a_lowered_candidate_is_kept_only_where_clearly_faster_than_the_fastest_float32_one():
    competing = _candidates(whole_openvino="fp32", whole_onnxruntime="fp32", whole_onnxruntime_int8="int8")
    tie = {"whole_openvino": 8.5, "whole_onnxruntime": 7.62, "whole_onnxruntime_int8": 7.6169}
    kept, no_faster = float32_at_a_tie("whole_onnxruntime_int8", competing, tie)
    assert kept == "whole_onnxruntime" and list(no_faster) == ["whole_onnxruntime_int8"]
    assert "7.62 ms" in no_faster["whole_onnxruntime_int8"]
    just_under = dict(tie, whole_onnxruntime_int8=7.62 / (1 + LOWERED_GAIN) * 1.001)
    assert float32_at_a_tie("whole_onnxruntime_int8", competing, just_under)[0] == "whole_onnxruntime"
    faster = dict(tie, whole_onnxruntime_int8=7.62 / (1 + LOWERED_GAIN) * 0.999)
    assert float32_at_a_tie("whole_onnxruntime_int8", competing, faster) == ("whole_onnxruntime_int8", {})
    # A float32 winner, or no float32 candidate timed, is kept as it is.
    assert float32_at_a_tie("whole_onnxruntime", competing, tie) == ("whole_onnxruntime", {})
    alone = {"whole_onnxruntime_int8": 7.6}
    assert float32_at_a_tie("whole_onnxruntime_int8", competing, alone) == ("whole_onnxruntime_int8", {})


def test_the_report_says_why_a_lowered_candidate_within_the_tolerance_was_not_kept():
    candidates = _candidates(whole_onnxruntime="fp32", whole_onnxruntime_int8="int8")
    settings = Settings.of(precision="int8", accuracy="cosine", tolerance=0.001)
    why = {"whole_onnxruntime_int8": "under 3% faster than whole_onnxruntime"}
    entry = precision_entry(candidates, "whole_onnxruntime", settings, 8, lambda c: True, why)
    assert entry["kept"] == "fp32" and entry["met"] == ["whole_onnxruntime_int8"]
    assert entry["note"] == "whole_onnxruntime_int8 met the tolerance, but ran under 3% faster than whole_onnxruntime"
    assert precision_entry(candidates, "whole_onnxruntime_int8", settings, 8, lambda c: True, {})["note"] is None
