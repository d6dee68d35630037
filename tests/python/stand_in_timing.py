"""The contest's timing replaced by fixed medians, for tests that decide which candidate wins; and
OpenVINO's profiles silenced, for tests where each part's speed is to be its whole graph's."""


def timed(monkeypatch, ms):
    """export.contest._time_candidates replaced: each candidate's median is ms.get(name, 2.0)."""
    from autograph import export as export_module
    monkeypatch.setattr(export_module.contest, "_time_candidates",
                        lambda candidates, tensors, graph, rounds=10, **_: {n: ms.get(n, 2.0) for n in candidates})


def unprofiled(monkeypatch):
    """OpenVINO's profiles say nothing (parts.NOT_PROFILED): lowering by parts goes by the whole graphs' times
    alone, every part tried where its precision's whole graph ran faster."""
    from autograph.export.compilers.openvino import OpenVinoCompiler
    from autograph.export.parts import NOT_PROFILED
    monkeypatch.setattr(OpenVinoCompiler, "node_times", lambda self, builder, part, made: NOT_PROFILED)
