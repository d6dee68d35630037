"""Lowering part by part (export/lowering.py): where the whole graph in bf16 misses option tolerance,
the graph is cut into parts of about equal FLOPs at narrow places, and each part is kept in bf16 only
where the whole program still meets the tolerance; a part that misses it stays fp32 and the report says
so, part by part, with the error measured when it was tried. A part is tried in a precision only where the
compiler's profiles of its whole graphs say it runs faster there than in float32.

Tolerances: the model's second block adds 1024 to its input before a 1x1 convolution and subtracts the
constant back: bfloat16 rounds 1024 + x to steps of 8, losing x (of order 1) entirely, an error of the
output's own order; float32 rounds it to 1.2e-4, far below the float32 floor (1e-3). Its first block,
ordinary convolutions, carries bfloat16's own error (about 2^-8 = 3.9e-3 of the scale, measured below
0.02 here), well within the tolerance 0.05."""
import hashlib
import types

import pytest
import torch

import autograph
from autograph.settings import Settings
from autograph._library import openvino_missing
from autograph.export.calibration import INT8_CALIBRATION_INPUTS
from autograph.export.compilers.openvino import int8_missing
from cpu_features import needs_bf16_cpu
from autograph.export import lowering
from stand_in_timing import unprofiled

needs_openvino = pytest.mark.skipif(openvino_missing() is not None, reason=f"no OpenVINO parts: {openvino_missing()}")
needs_int8 = pytest.mark.skipif(int8_missing() is not None, reason=f"no int8 parts: {int8_missing()}")


def _chain(flops, reads):
    """A graph of len(flops) nodes (node i makes value i + 1 from value i, and from the values in
    reads.get(i)) and its plan body, one operator per node in order."""
    nodes = [{"op": "aten::x", "args": [{"value": i}] + [{"value": v} for v in reads.get(i, [])], "kwargs": {},
              "outputs": [i + 1]} for i in range(len(flops))]
    graph = {"nodes": nodes, "outputs": [len(flops)]}
    body = {"operators": [{"nodes": [i], "anchor": i, "flops": f} for i, f in enumerate(flops)],
            "schedule": {"stages": [{"groups": [[i]]} for i in range(len(flops))]}}
    return graph, body


def test_parts_cover_the_plan_in_order_with_about_equal_flops():
    graph, body = _chain([1.0] * 16, {})
    parts = lowering.cut_by_cost(graph, body, 4)
    assert [n for p in parts for n in p] == list(range(16))
    assert [len(p) for p in parts] == [4, 4, 4, 4]


def test_a_cut_goes_where_fewest_tensors_cross_it():
    # Node 9 reads value 5 too (a residual): cuts after nodes 5..8 would hand two tensors over; after 4
    # or 9, one. The even place (after node 7) lies inside the residual: the cut moves out of it.
    graph, body = _chain([1.0] * 16, {9: [5]})
    parts = lowering.cut_by_cost(graph, body, 2)
    assert len(parts) == 2 and parts[0][-1] in (4, 9)


def test_a_graph_too_small_to_cut_stays_one_part():
    graph, body = _chain([1.0] * 5, {})
    assert lowering.cut_by_cost(graph, body, 4) == [list(range(5))]
    graph, body = _chain([0.0] * 16, {})  # no FLOPs to weigh the parts by
    assert lowering.cut_by_cost(graph, body, 4) == [list(range(16))]


class _Ladder:
    """A compiler whose parts lower to int8 and to bf16 (as OpenVINO's with NNCF at hand)."""

    def lowered(self, device, precision, candidate):
        return ["int8", "bf16"] if precision == "int8" else [precision]


def _four_parts(compiled):
    """A stand-in for lowered_by_parts' parts: four operators of 4, 3, 2 and 1 FLOPs, one per part, on a
    _Ladder; its candidates are their trials' precisions (what the judges below read); `compiled` is called
    where parts are made in a precision."""
    graph, body = _chain([4.0, 3.0, 2.0, 1.0], {})
    for op in body["operators"]:
        op["kind"] = "compute"
    return types.SimpleNamespace(body=body, compiler=_Ladder(), builder=types.SimpleNamespace(device=torch.device("cpu")),
                                 candidate=lambda parts, trial, settings, precision: list(trial), compiled=compiled)


def test_a_part_beyond_int8_is_tried_in_bf16_before_it_stays_fp32():
    # Four parts, the costliest first: part 0 meets the bound in int8, part 1 only in bf16, part 2 in
    # neither, part 3 in int8. The judge sees each trial's precisions (the stand-in candidate).
    lowered_first = []
    made = _four_parts(lambda parts, precisions: lowered_first.append(list(precisions)))
    beyond = {1: {"int8"}, 2: {"int8", "bf16"}}
    tried = []

    def judge(trial):
        tried.append(list(trial))
        missed = any(p in beyond.get(k, ()) for k, p in enumerate(trial))
        return (0.5 if missed else 0.01), ("beyond tolerance" if missed else None), 0.1

    precisions, listed = lowering._lowered_one_by_one(made, [[0], [1], [2], [3]], ["int8", "bf16"], None, judge)
    assert precisions == ["int8", "bf16", "fp32", "int8"]
    assert lowered_first == [["int8"] * 4]  # every part made in int8 at once, before the first trial
    assert [p["precision"] for p in listed] == precisions
    assert listed[1]["tried"] == {"int8": 0.5, "bf16": 0.01} and listed[1]["error"] == 0.5  # error: in int8
    assert listed[2]["tried"] == {"int8": 0.5, "bf16": 0.5}
    assert tried[:3] == [["int8", "fp32", "fp32", "fp32"], ["int8", "int8", "fp32", "fp32"],
                         ["int8", "bf16", "fp32", "fp32"]]  # each part tried with the kept ones before it
    assert lowering.ladder(_Ladder(), torch.device("cpu"), "bf16") == ["bf16"]


@pytest.mark.parametrize("int8_ms, bf16_ms, ladder", [(5.0, 30.0, ["int8"]), (5.0, 10.0, ["int8", "bf16"]),
                                                    (25.0, 30.0, [])])
def test_a_precision_whose_whole_graph_ran_slower_than_float32_is_left_off_the_ladder(int8_ms, bf16_ms, ladder):
    # The int8 whole graph missed the bound; it and its compiler's bf16 whole graph (beyond the bound too:
    # their speed is what counts) ran at int8_ms and bf16_ms beside its float32 one's 20 ms. A part kept in
    # a precision slower than float32 would make the program slower than leaving it in float32.
    from autograph.export.candidate import Candidate
    from autograph.export.plans import Program
    compiler = _Ladder()
    made = {p: Candidate(f"whole_{p}", built=Program("", [], {}, 1), precision=p, compiler=compiler, kind="whole")
            for p in ("fp32", "bf16", "int8")}
    made["int8"].drop("beyond tolerance", "missed")
    made["bf16"].drop("beyond tolerance", "missed")
    ms = {"whole_fp32": 20.0, "whole_bf16": bf16_ms, "whole_int8": int8_ms}
    cpu = types.SimpleNamespace(device=torch.device("cpu"))
    steps, timed, estimates = lowering.faster_ladder({c.name: c for c in made.values()}, made["int8"], cpu,
                                                     lambda timed: {name: ms[name] for name in timed})
    assert steps == ladder and estimates == {}  # no compiled part to profile: the whole graphs' times decide
    why = "not one compiled part"
    assert timed == {"int8": {"whole_ms": int8_ms, "fp32_ms": 20.0, "tried": int8_ms < 20.0, "profile": why},
                     "bf16": {"whole_ms": bf16_ms, "fp32_ms": 20.0, "tried": bf16_ms < 20.0, "profile": why}}


class _Profiled:
    """A compiler whose parts lower to int8 alone, its profiles of its whole graphs saying each node's
    microseconds (`us`, by precision), with `named` of each run led back to the graph's nodes."""

    def __init__(self, us, named=1.0):
        self.us, self.named = us, named

    def lowered(self, device, precision, candidate):
        return [precision]

    def node_times(self, builder, part, made):
        from autograph.export.parts import NodeTimes
        return NodeTimes(dict(self.us[made]), self.named)


def _wholes(compiler, precisions=("fp32", "int8")):
    """One-part whole-graph candidates of `compiler` in `precisions`, the lowered ones beyond the bound; each
    holds its precision as its compiled part (what _Profiled reads)."""
    from autograph.export.candidate import Candidate
    from autograph.export.plans import Program
    made = {p: Candidate(f"whole_{p}", built=Program("", [], {}, 1), precision=p, compiler=compiler, kind="whole")
            for p in precisions}
    for p, c in made.items():
        c.parts, c.compiled = [[0, 1]], [p]
        if p != "fp32":
            c.drop("beyond tolerance", "missed")
    return made


def test_a_precision_whose_whole_graph_ran_slower_is_tried_on_the_parts_its_profile_says_run_faster():
    # int8's whole graph runs slower (25 ms against 20) because of one kernel: node "a" takes 80% of its run
    # (20 ms) against 50% of float32's (10 ms), while node "b" takes 5 ms against 10. Each node's estimate is
    # its share of its profiled run times its whole graph's measured time.
    compiler = _Profiled({"fp32": {"a": 50.0, "b": 50.0}, "int8": {"a": 800.0, "b": 200.0}})
    made = _wholes(compiler)
    ms = {"whole_fp32": 20.0, "whole_int8": 25.0}
    cpu = types.SimpleNamespace(device=torch.device("cpu"))
    steps, timed, estimates = lowering.faster_ladder({c.name: c for c in made.values()}, made["int8"], cpu,
                                                     lambda timed: {name: ms[name] for name in timed})
    assert steps == ["int8"]
    assert timed == {"int8": {"whole_ms": 25.0, "fp32_ms": 20.0, "tried": False, "by_part": True}}
    assert estimates == {"int8": {"a": 20.0, "b": 5.0}, "fp32": {"a": 10.0, "b": 10.0}}
    # A profile that leads too little of its run back to the graph says nothing: the whole graphs decide.
    compiler.named = 0.5
    steps, timed, estimates = lowering.faster_ladder({c.name: c for c in made.values()}, made["int8"], cpu,
                                                     lambda timed: {name: ms[name] for name in timed})
    assert steps == [] and estimates == {} and timed["int8"]["profile"] == "50% of its profiled run named, not 80%"


def test_a_part_estimated_no_faster_below_float32_is_not_tried_there():
    # Four parts, the costliest first; by the estimates part 1 runs slower in int8 and part 3 no faster:
    # neither is lowered (nor judged), the others are tried as ever, and each part's entry says its estimates.
    lowered_first, tried = [], []
    made = _four_parts(lambda parts, precisions: lowered_first.append(list(parts)))

    def judge(trial):
        tried.append(list(trial))
        return 0.01, None, 0.1

    part_ms = {"int8": [1.0, 3.0, 1.0, 2.0], "fp32": [2.0, 2.0, 2.0, 2.0]}
    precisions, listed = lowering._lowered_one_by_one(made, [[0], [1], [2], [3]], ["int8"], None, judge, part_ms)
    assert precisions == ["int8", "fp32", "int8", "fp32"]
    assert lowered_first == [[[0], [2]]]  # only the parts tried in int8 are made in it
    assert tried == [["int8", "fp32", "fp32", "fp32"], ["int8", "fp32", "int8", "fp32"]]
    assert [p.get("not_tried") is not None for p in listed] == [False, True, False, True]
    assert listed[1]["ms"] == {"int8": 3.0, "fp32": 2.0} and "error" not in listed[1]


@pytest.mark.parametrize("int8_ms, kept", [([1.99, 3.0, 2.0, 2.0], False), ([1.5, 3.0, 2.0, 2.0], True)])
def test_no_part_is_tried_where_the_parts_estimated_faster_would_save_too_little(int8_ms, kept):
    # Part 0 alone is estimated faster in int8: by 0.01 ms of the graph's 8 (below MIN_SAVING, 2%: the contest's
    # timing could not tell it), or by 0.5. Only then is anything made or judged.
    made = _four_parts(lambda parts, precisions: calls.append(parts))
    made.name, made.compiler.name, made.merges = "parts_stand_in_int8", "Stand-in", False
    calls = []

    def judge(trial):
        calls.append(trial)
        return 0.01, None, 0.1

    part_ms = {"int8": int8_ms, "fp32": [2.0] * 4}
    out = lowering._lowered(made, ["int8"], Settings.of(), judge, [[0], [1], [2], [3]], part_ms)
    if kept:  # tried (the stand-in's trials are no programs: what comes of them is the tests' above)
        assert calls[:2] == [[[0]], ["int8", "fp32", "fp32", "fp32"]]
    else:
        assert out.out["why"] == "not faster" and not calls
        assert "would save 0.01 ms of 8, less than 2%" in out.out["detail"]
        assert out.out["parts_ms"][0] == {"int8": 1.99, "fp32": 2.0}


class Sensitive(torch.nn.Module):
    """Ordinary convolutions, then a block that bfloat16 cannot compute (see the module's docstring)."""

    def __init__(self):
        super().__init__()
        self.a1 = torch.nn.Conv2d(8, 32, 3, padding=1)
        self.a2 = torch.nn.Conv2d(32, 32, 3, padding=1)
        self.a3 = torch.nn.Conv2d(32, 8, 3, padding=1)
        self.b = torch.nn.Conv2d(8, 8, 1, bias=False)
        with torch.no_grad():
            self.register_buffer("shift", 1024.0 * self.b.weight.sum((1, 2, 3)).view(1, 8, 1, 1))

    def forward(self, x):
        y = torch.relu(self.a3(torch.relu(self.a2(torch.relu(self.a1(x))))))
        return self.b(y + 1024.0) - self.shift


@pytest.fixture(autouse=True)
def cache(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("AUTOGRAPH_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "lowering-cache"))


def _packages(optimized):
    """The digests of the packages the optimized program carries (its uint8 weights)."""
    return {hashlib.sha256(t.contiguous().numpy().tobytes()).hexdigest()
            for t in optimized.state_dict.values() if t.dtype == torch.uint8}


def _error(got, want):
    return ((got - want).abs().max() / want.abs().max()).item()


@needs_openvino
@needs_bf16_cpu
def test_a_part_that_misses_the_tolerance_stays_fp32_and_the_report_says_so(monkeypatch, tmp_path):
    from autograph import export as export_module
    monkeypatch.setattr(lowering, "PARTS", 2)
    ms = {"parts_openvino_bf16": 1.0, "whole_openvino_bf16": 1.5}  # bf16 faster than float32 (2.0) here
    unprofiled(monkeypatch)  # every part as fast as its whole graph: each is tried
    monkeypatch.setattr(export_module.contest, "_time_candidates",
                        lambda candidates, tensors, graph, rounds=10, **_: {n: ms.get(n, 2.0) for n in candidates})
    torch.manual_seed(0)
    model = Sensitive().eval()
    x = torch.randn(1, 8, 16, 16)
    with torch.no_grad():
        want = model(x)
    ep = torch.export.export(model, (x,))
    loaded = set(torch.ops.autograph.loaded_compiled_parts())
    optimized, report = autograph.optimize(ep, method="sequential", precision="bf16", tolerance=0.05)
    # The packages the trials loaded are released, but for the kept program's.
    assert set(torch.ops.autograph.loaded_compiled_parts()) - loaded <= _packages(optimized)
    contest = report["inductor"]
    assert contest["dropped"]["whole_openvino_bf16"]["why"] == "beyond tolerance"
    assert contest["kept"] == "parts_openvino_bf16" and contest["precision"]["kept"] == "bf16"
    assert "parts_openvino_bf16" in contest["precision"]["met"]
    assert contest["candidates"]["parts_openvino_bf16"]["ladder"]["bf16"]["tried"]  # its whole graph ran faster
    listed = contest["candidates"]["parts_openvino_bf16"]["parts_precision"]
    assert [p["precision"] for p in listed] == ["bf16", "fp32"]  # the second part holds the sensitive block
    assert listed[0]["error"] <= 0.05 < listed[1]["error"]  # each as measured when it was tried in bf16
    assert all(p["nodes"] > 0 and p["flops"] > 0 for p in listed)
    with torch.no_grad():
        got = optimized.module()(x)
    assert 0 < _error(got, want) <= 0.05
    torch.export.save(optimized, tmp_path / "model.pt2")  # the parts' precisions travel in their specs
    loaded = torch.export.load(tmp_path / "model.pt2")
    (call,) = [n for n in loaded.graph.nodes if n.target == torch.ops.autograph.execute.default]
    assert call.args[1].count("bf16") == 1  # one part's spec names bf16; the other's none (float32)
    with torch.no_grad():
        assert torch.equal(loaded.module()(x), got)


@needs_openvino
@needs_bf16_cpu
def test_where_no_part_meets_the_tolerance_the_program_stays_fp32(monkeypatch):
    from autograph import export as export_module
    monkeypatch.setattr(lowering, "PARTS", 2)
    monkeypatch.setattr(export_module.contest, "_time_candidates",  # bf16's whole graph faster: parts are tried
                        lambda candidates, tensors, graph, rounds=10, **_:
                        {n: 1.5 if n == "whole_openvino_bf16" else 2.0 for n in candidates})
    unprofiled(monkeypatch)
    torch.manual_seed(1)  # other weights than the test above's: other packages
    model = Sensitive().eval()
    x = torch.randn(1, 8, 16, 16)
    with torch.no_grad():
        want = model(x)
    loaded = set(torch.ops.autograph.loaded_compiled_parts())
    optimized, report = autograph.optimize(torch.export.export(model, (x,)), method="sequential",
                                           precision="bf16", tolerance=1e-6)
    assert set(torch.ops.autograph.loaded_compiled_parts()) - loaded <= _packages(optimized)  # the trials' released
    contest = report["inductor"]
    dropped = contest["dropped"]["parts_openvino_bf16"]
    assert dropped["why"] == "no part within tolerance"
    assert [p["precision"] for p in dropped["parts_precision"]] == ["fp32", "fp32"]
    assert contest["precision"]["kept"] == "fp32" and contest["precision"]["met"] == []
    with torch.no_grad():
        assert _error(optimized.module()(x), want) <= 1e-3


@needs_openvino
@needs_bf16_cpu
def test_where_the_whole_graph_in_bf16_ran_slower_than_float32_no_part_is_lowered(monkeypatch):
    from autograph import export as export_module
    monkeypatch.setattr(lowering, "PARTS", 2)
    monkeypatch.setattr(export_module.contest, "_time_candidates",
                        lambda candidates, tensors, graph, rounds=10, **_:
                        {n: 3.0 if n == "whole_openvino_bf16" else 2.0 for n in candidates})
    tried = []
    monkeypatch.setattr(lowering, "lowered_by_parts", lambda *args, **kwargs: tried.append(args))
    unprofiled(monkeypatch)  # without profiles that say which parts run faster in bf16, its whole graph decides
    torch.manual_seed(0)
    model = Sensitive().eval()
    x = torch.randn(1, 8, 16, 16)
    _, report = autograph.optimize(torch.export.export(model, (x,)), method="sequential", precision="bf16",
                                   tolerance=0.05)
    contest = report["inductor"]
    assert contest["dropped"]["whole_openvino_bf16"]["why"] == "beyond tolerance"
    dropped = contest["dropped"]["parts_openvino_bf16"]
    assert dropped["why"] == "not faster" and not tried
    assert dropped["ladder"] == {"bf16": {"whole_ms": 3.0, "fp32_ms": 2.0, "tried": False,
                                         "profile": "0% of its profiled run named, not 80%"}}
    assert contest["precision"]["kept"] == "fp32"


def test_no_part_is_lowered_where_another_way_of_the_same_compiler_met_the_tolerance():
    # NNCF's plain type missed the bound on a transformer and its transformer type met it: the plain type's
    # parts would be tried for a program slower than the whole graph that met it (its parts in float32).
    from autograph.export.candidate import Candidate
    from autograph.export.contest import Contest
    compiler = types.SimpleNamespace(lowers_by_parts=True, label="stand_in", name="Stand-in")
    missed = Candidate("whole_stand_in_int8", entry={"parts": 1}, precision="int8", compiler=compiler, kind="whole")
    missed.drop("beyond tolerance")
    met = Candidate("whole_stand_in_int8_t", entry={"parts": 1}, precision="int8", compiler=compiler, kind="whole",
                    variant="t")
    contest = object.__new__(Contest)  # only its record of what was skipped is read
    contest.skipped = {}
    assert contest._lowered_by_parts({missed.name: missed, met.name: met}) == {}
    assert contest.skipped == {"parts_stand_in_int8": "another way of lowering met the tolerance"}


class _LongKernel(torch.nn.Module):
    """A strided convolution with a long kernel (a filter bank over a raw signal, as audio front ends have),
    then a chain of ordinary convolutions: parts whose INT8 kernels differ in what they gain."""

    def __init__(self):
        super().__init__()
        self.front = torch.nn.Conv1d(1, 32, 512, stride=32, padding=256)
        self.body = torch.nn.Sequential(*[m for _ in range(6) for m in (torch.nn.Conv1d(32, 32, 5, padding=2),
                                                                         torch.nn.ReLU())])

    def forward(self, x):
        return self.body(self.front(x).abs())


@needs_int8
def test_openvinos_int8_parts_are_tried_where_its_profiles_say_they_run_faster_than_float32(monkeypatch):
    # The whole graph in INT8 misses the bound (0.1% of the outputs' scale; INT8 rounds about 1%): the graph is
    # lowered part by part. Each part's time in INT8 and in float32 is read off OpenVINO's profiles of its two
    # whole graphs, scaled to their measured times; a part is tried in INT8 only where it is estimated faster.
    monkeypatch.setattr(lowering, "PARTS", 4)
    torch.manual_seed(0)
    model, x = _LongKernel().eval(), torch.randn(1, 1, 8192)
    calibration = [(torch.randn(1, 1, 8192),) for _ in range(INT8_CALIBRATION_INPUTS)]


    def drop(outputs, references):  # a user's function: NNCF's quantization is not aimed at it
        return -max(((o[0] - r[0]).abs().max() / r[0].abs().max()).item() for o, r in zip(outputs, references))
    _, report = autograph.optimize(torch.export.export(model, (x,)), method="sequential", precision="int8",
                                   accuracy=drop, tolerance=1e-3, calibration=calibration, inductor=False,
                                   onnxruntime=False)
    contest = report["inductor"]
    assert contest["dropped"]["whole_openvino_int8"]["why"] == "beyond tolerance", contest["dropped"]
    entry = contest["candidates"].get("parts_openvino_int8") or contest["dropped"]["parts_openvino_int8"]
    ladder = entry["ladder"]["int8"]
    assert ladder["by_part"] and "profile" not in ladder, ladder  # its profiles led back to the graph's nodes
    if entry.get("why") == "not faster":  # a CPU whose INT8 kernels gain too little on these parts: none tried
        estimates = entry["parts_ms"]
        saving = sum(max(0.0, p["fp32"] - p["int8"]) for p in estimates)
        assert saving < lowering.MIN_SAVING * sum(p["fp32"] for p in estimates), entry
    else:
        estimates = [part["ms"] for part in entry["parts_precision"]]
        for part in entry["parts_precision"]:
            assert ("not_tried" in part) == (part["ms"]["int8"] >= part["ms"]["fp32"]), part
            assert ("not_tried" in part) <= (part["precision"] == "fp32")
    assert len(estimates) >= 2 and all(p["int8"] >= 0 and p["fp32"] >= 0 for p in estimates)
    # The estimates share out the float32 whole graph's measured time (a little goes to nodes no part holds).
    assert 0.8 * ladder["fp32_ms"] <= sum(p["fp32"] for p in estimates) <= 1.001 * ladder["fp32_ms"]
