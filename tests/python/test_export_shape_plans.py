"""Plans for further shapes on the export path (`shapes` with a program of dynamic dims): the program is
exported again, planned (and compiled) at each listed shape; inputs of exactly one of those shapes run
its plan, the example's shape the program's own plan, any other shape in range the program's graph.
Outputs compared with eager's at relative 1e-5 of their scale (float32, the same ATen kernels; only
reduction orders may differ), 1e-4 where Inductor's generated code runs (its own reduction order and
fused arithmetic)."""
import json
import subprocess
import sys
from pathlib import Path

import pytest
import torch

import autograph
from autograph.export.aten_import import import_graph as _import
from autograph.export.plans import plan as _plan
from autograph.export_cli import describe
from test_export_dynamic_shapes import TOL, TinyEncoder, _close  # the export path's shape tests share them

ROOT = Path(__file__).resolve().parents[2]


class Scaled(torch.nn.Module):
    def __init__(self, factor: float):
        super().__init__()
        self.factor = factor

    def forward(self, x):
        return (x * self.factor).sum(1)


@pytest.fixture
def encoder():
    torch.manual_seed(0)
    model = TinyEncoder().eval()
    ids = torch.randint(0, 100, (2, 16))
    dims = {0: torch.export.Dim("batch", min=1, max=8), 1: torch.export.Dim("length", min=2, max=512)}
    return model, ids, torch.export.export(model, (ids,), dynamic_shapes=(dims,), strict=False)


def _program(optimized) -> str:
    (call,) = [n for n in optimized.graph.nodes if n.target == torch.ops.autograph.execute.default]
    return call.args[1]


def _plan_of(model, x) -> str:
    decomposed = torch.export.export(model, (x,), strict=False).run_decompositions({})
    graph, weights, _ = _import(decomposed)
    program, _ = _plan(graph, weights + [x], autograph.Settings(method="sequential", device="cpu"))
    return program


def test_inputs_of_a_planned_shape_run_that_plan_and_no_other():
    """The dispatch by shape, made visible: the plan for 4x5 is another model's (x * 3), so its outputs
    tell which plan ran."""
    ep = torch.export.export(Scaled(2.0), (torch.randn(2, 5),),
                             dynamic_shapes=({0: torch.export.Dim("b", min=1, max=16)},), strict=False)
    main = _program(autograph.optimize(ep, method="sequential", inductor=False, openvino=False, onnxruntime=False)[0])
    program = torch.ops.autograph.with_plan_for_shape(main, _plan_of(Scaled(3.0), torch.randn(4, 5)), [0])
    assert json.loads(program[:program.index("\n")])["version"] == 3
    for rows, factor in ((4, 3.0), (2, 2.0), (3, 2.0), (9, 2.0)):
        x = torch.randn(rows, 5)
        (got,) = torch.ops.autograph.execute([x], program)
        _close(got, (x * factor).sum(1))


def test_a_plan_that_does_not_fit_the_program_is_refused():
    ep = torch.export.export(Scaled(2.0), (torch.randn(2, 5),),
                             dynamic_shapes=({0: torch.export.Dim("b", min=1, max=16)},), strict=False)
    main = _program(autograph.optimize(ep, method="sequential", inductor=False, openvino=False, onnxruntime=False)[0])
    plan = _plan_of(Scaled(2.0), torch.randn(4, 5))
    with pytest.raises(RuntimeError, match="input positions"):
        torch.ops.autograph.with_plan_for_shape(main, plan, [0, 1])
    with pytest.raises(RuntimeError, match="not one of the program's inputs"):
        torch.ops.autograph.with_plan_for_shape(main, plan, [3])
    with pytest.raises(RuntimeError, match="same input shapes"):  # the program's own plan's shapes
        torch.ops.autograph.with_plan_for_shape(main, _plan_of(Scaled(2.0), torch.randn(2, 5)), [0])
    once = torch.ops.autograph.with_plan_for_shape(main, plan, [0])
    with pytest.raises(RuntimeError, match="same input shapes"):
        torch.ops.autograph.with_plan_for_shape(once, plan, [0])
    with pytest.raises(RuntimeError, match="without a graph for other shapes"):  # a static program
        torch.ops.autograph.with_plan_for_shape(plan, _plan_of(Scaled(2.0), torch.randn(3, 5)), [0])
    with pytest.raises(RuntimeError, match="not an autograph program"):
        torch.ops.autograph.with_plan_for_shape(main, "{}\n{}", [0])


def test_encoder_planned_for_listed_shapes_saved_and_served_in_a_fresh_process(encoder, tmp_path):
    model, _, ep = encoder
    optimized, report = autograph.optimize(ep, method="autograph", inductor=False, openvino=False, onnxruntime=False, shapes=[(1, 64), (8, 128), (2, 16)])
    lines = report["shape_plans"]
    assert [line["shapes"] for line in lines] == [[[1, 64]], [[8, 128]], [[2, 16]]]
    assert all(line["stages"] >= 1 and line["seconds"] > 0 for line in lines[:2])
    assert "example's" in lines[2]["skipped"]
    assert json.loads(_program(optimized)[:_program(optimized).index("\n")])["version"] == 3
    info = describe(optimized)
    assert [p["shapes"] for p in info["shape_plans"]] == [[[1, 64]], [[8, 128]]]
    shapes = ((1, 64), (8, 128), (2, 16), (3, 40), (8, 512))
    with torch.no_grad():
        for shape in shapes:
            x = torch.randint(0, 100, shape)
            _close(optimized.module()(x), model(x))
    path = tmp_path / "encoder.pt2"
    torch.export.save(optimized, str(path))
    xs = [torch.randint(0, 100, s) for s in shapes]
    with torch.no_grad():
        torch.save({"xs": xs, "want": [model(x) for x in xs]}, tmp_path / "io.pt")
    script = f"""
import sys, torch
sys.path.insert(0, {str(ROOT / 'python')!r})
import autograph
module = torch.export.load({str(path)!r}).module()
io = torch.load({str(tmp_path / 'io.pt')!r})
for x, want in zip(io["xs"], io["want"]):
    got = module(x)
    err = (got - want).abs().max().item() / want.abs().max().item()
    assert got.shape == want.shape and err <= {TOL}, (x.shape, err)
print("ok")
"""
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0 and "ok" in run.stdout, run.stderr


def test_shapes_that_cannot_be_planned_are_clear_errors(encoder):
    model, ids, ep = encoder
    with pytest.raises(autograph.InputError, match="ranges of its dynamic dims"):
        autograph.optimize(ep, inductor=False, openvino=False, onnxruntime=False, shapes=[(16, 64)])  # batch is at most 8
    with pytest.raises(autograph.InputError, match="rank"):
        autograph.optimize(ep, inductor=False, openvino=False, onnxruntime=False, shapes=[(1, 64, 2)])
    with pytest.raises(autograph.InputError, match="2 tensor shapes"):
        autograph.optimize(ep, inductor=False, openvino=False, onnxruntime=False, shapes=[[(1, 64), (1, 64)]])
    static = torch.export.export(model, (ids,), strict=False)
    with pytest.raises(autograph.InputError, match="static shapes"):
        autograph.optimize(static, inductor=False, openvino=False, onnxruntime=False, shapes=[(1, 64)])


def test_inductor_compiles_each_listed_shape(tmp_path):
    """With Inductor on, each listed shape gets packages of its own (weights frozen into them), beside
    the example's and the one for every other shape; the program passes packages only."""
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.GELU(), torch.nn.Linear(32, 4)).eval()
    x = torch.randn(2, 16)
    ep = torch.export.export(model, (x,), dynamic_shapes=({0: torch.export.Dim("batch", min=1, max=64)},),
                             strict=False)
    optimized, report = autograph.optimize(ep, method="sequential", check_rewrites=False, shapes=[(32, 16)])
    (line,) = report["shape_plans"]
    assert line["kept"] in ("plan", "whole")
    assert all(t.dtype == torch.uint8 for t in optimized.state_dict.values())  # packages only
    assert describe(optimized)["shape_plans"][0]["inductor_parts"] >= 1
    with torch.no_grad():
        for n in (32, 2, 7):
            xi = torch.randn(n, 16)
            _close(optimized.module()(xi), model(xi), tol=1e-4)


def test_cli_plans_listed_shapes_of_a_pt2_and_inspect_lists_them(encoder, tmp_path):
    import os
    _, _, ep = encoder
    program, out = tmp_path / "encoder.pt2", tmp_path / "encoder_opt.pt2"
    torch.export.save(ep, str(program))
    env = dict(os.environ) if os.environ.get("AUTOGRAPH_TEST_INSTALLED") == "1" else \
        {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT / "python"), os.environ.get("PYTHONPATH")]))}

    def cli(*args):
        return subprocess.run([sys.executable, "-m", "autograph.export_cli", *map(str, args)], capture_output=True,
                              text=True, timeout=600, env=env)
    r = cli("optimize", program, "-o", out, "--method", "sequential", "--no-inductor", "--no-openvino", "--no-onnxruntime",
            "--shapes", "4x32;1x100", "--json")
    assert r.returncode == 0, r.stderr
    assert [line["shapes"] for line in json.loads(r.stdout)["shape_plans"]] == [[[4, 32]], [[1, 100]]]
    r = cli("inspect", out)
    assert r.returncode == 0 and "a plan for [[4, 32]]" in r.stdout and "a plan for [[1, 100]]" in r.stdout, r.stderr
    r = cli("optimize", program, "-o", out, "--no-inductor", "--no-openvino", "--no-onnxruntime", "--shapes", "99x32")
    assert r.returncode == 2 and "ranges of its dynamic dims" in r.stderr, r.stderr
