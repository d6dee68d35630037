"""The contest's timing replaced by fixed medians, for tests that decide which candidate wins; and
OpenVINO's profiles silenced, for tests where each part's speed is to be its whole graph's, or made even,
for tests where each part's estimate is to follow its whole graph's median."""


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


def evenly_profiled(monkeypatch):
    """OpenVINO's profiles give every node of a whole graph an equal share of its run: each part's estimate
    in a precision is its share of that precision's whole graph's median."""
    from autograph.export.compilers.openvino import OpenVinoCompiler
    from autograph.export.parts import NodeTimes
    monkeypatch.setattr(OpenVinoCompiler, "node_times", lambda self, builder, part, made: NodeTimes(
        {builder.graph["nodes"][i]["name"]: 1.0 for i in part}, 1.0))
