"""The `autograph` command on .pt2 (torch.export) programs: optimize, inspect, bench (python/autograph/
export_cli.py, which the installed command hands .pt2 models to), and the C++ CLI's message for them."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

import autograph  # noqa: F401 - registers autograph::execute, which torch.export.load of an optimized program needs

ROOT = Path(__file__).resolve().parents[2]
ENV = dict(os.environ) if os.environ.get("AUTOGRAPH_TEST_INSTALLED") == "1" else \
    {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT / "python"), os.environ.get("PYTHONPATH")]))}


def _autograph(*args, timeout=600):
    return subprocess.run([sys.executable, "-m", "autograph.export_cli", *map(str, args)], capture_output=True,
                          text=True, timeout=timeout, env=ENV)


class Branches(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.a = torch.nn.Conv2d(4, 4, 1)
        self.b = torch.nn.Conv2d(4, 4, 3, padding=1)

    def forward(self, x):
        return torch.relu(self.a(x)) + torch.sigmoid(self.b(x))


@pytest.fixture(scope="module")
def program(tmp_path_factory):
    torch.manual_seed(0)
    path = tmp_path_factory.mktemp("cli") / "branches.pt2"
    torch.export.save(torch.export.export(Branches().eval(), (torch.randn(1, 4, 8, 8),)), str(path))
    return path


def test_optimize_inspect_and_bench_a_pt2(program, tmp_path):
    out = tmp_path / "branches_opt.pt2"
    r = _autograph("optimize", program, "-o", out, "--method", "nimble", "--option", "inductor=false",
                   "--option", "openvino=false", "--option", "onnxruntime=false", "--json")
    assert r.returncode == 0, r.stderr
    report = json.loads(r.stdout)
    assert report["method"] == "nimble" and report["streams"] >= 2 and out.exists()
    # The same options as flags made from the option table.
    r = _autograph("optimize", program, "-o", tmp_path / "one_stream.pt2", "--method", "nimble", "--no-inductor",
                   "--no-openvino", "--no-onnxruntime", "--max-streams", 1, "--json")
    assert r.returncode == 0, r.stderr
    report = json.loads(r.stdout)
    assert report["method"] == "nimble" and report["streams"] == 1 and "contest" not in report

    r = _autograph("inspect", out, "--json")
    assert r.returncode == 0, r.stderr
    info = json.loads(r.stdout)
    assert info["optimized"] and info["format"] == "autograph-program" and info["streams"] >= 2
    assert info["inductor_parts"] == 0 and info["inputs"] == 1 and info["outputs"] == 1

    r = _autograph("inspect", program)
    assert r.returncode == 0 and "not optimized" in r.stdout and "aten.conv2d.default ×2" in r.stdout, r.stdout

    r = _autograph("bench", program, "--optimized", out, "--warmup", 1, "--runs", 3, "--json")
    assert r.returncode == 0, r.stderr
    result = json.loads(r.stdout)
    assert result["exported"]["median_ms"] > 0 and result["autograph"]["median_ms"] > 0 and result["speedup"] > 0


def _error(r) -> str:
    return r.stderr.strip().splitlines()[-1]


def test_bad_inputs_are_one_line_errors(program, tmp_path):
    r = _autograph("inspect", tmp_path / "missing.pt2")
    assert r.returncode == 2 and _error(r) == f"autograph: error: cannot open '{tmp_path / 'missing.pt2'}': no such file"
    r = _autograph("optimize", program, "-o", tmp_path / "o.pt2", "--option", "no_such_option=1")
    assert r.returncode == 2 and _error(r).startswith("autograph: error: unknown option 'no_such_option'"), r.stderr
    r = _autograph("optimize", program, "-o", tmp_path / "o.pt2", "--option", "verify")
    assert r.returncode == 2 and "KEY=VALUE" in _error(r)
    r = _autograph("optimize", program, "-o", tmp_path / "o.pt2", "--verify", 99)
    assert r.returncode == 2 and _error(r) == "autograph: error: option 'verify' is 99; expected 0..16", r.stderr
    not_a_program = tmp_path / "junk.pt2"
    not_a_program.write_bytes(b"not a zip")
    r = _autograph("inspect", not_a_program)
    assert r.returncode == 2 and "not a torch.export program" in _error(r), r.stderr


def test_the_cpp_cli_names_the_export_path_for_a_pt2(cli, program, tmp_path):
    r = subprocess.run([cli, "optimize", str(program), "-o", str(tmp_path / "o.pt")], capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 2 and "torch.export program (.pt2)" in r.stderr and "pip install" in r.stderr, r.stderr


def test_a_pt2_with_dynamic_shapes_is_optimized_for_its_example_and_runs_others(tmp_path):
    torch.manual_seed(0)
    model = Branches().eval()
    path, out = tmp_path / "dynamic.pt2", tmp_path / "dynamic_opt.pt2"
    batch = torch.export.Dim("batch", min=1, max=16)
    torch.export.save(torch.export.export(model, (torch.randn(2, 4, 8, 8),), dynamic_shapes=({0: batch},)), str(path))
    r = _autograph("optimize", path, "-o", out, "--option", "inductor=false", "--json")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["dynamic_shapes"]["planned_for"] == [[2, 4, 8, 8]]
    r = _autograph("inspect", out, "--json")
    info = json.loads(r.stdout)
    assert info["dynamic"] and info["planned_for"] == [[2, 4, 8, 8]] and info["other_shapes"] == "aten"
    r = _autograph("inspect", out)
    assert "dynamic shapes: planned for [[2, 4, 8, 8]]; other shapes run the exported graph" in r.stdout, r.stdout
    optimized = torch.export.load(str(out))
    with torch.no_grad():
        x = torch.randn(5, 4, 8, 8)
        want = model(x)
        assert (optimized.module()(x) - want).abs().max().item() <= 1e-5 * want.abs().max().item()


def test_the_cli_called_in_process_leaves_the_callers_warning_filters_as_they_were(tmp_path):
    import warnings
    from autograph import export_cli
    before = list(warnings.filters)
    assert export_cli.main(["inspect", str(tmp_path / "missing.pt2")]) == 2  # an error, reported
    assert warnings.filters == before


@pytest.mark.parametrize("measure", ["max_error", "cosine"])
def test_calibration_inputs_from_a_file_reach_the_accuracy_gate(program, tmp_path, measure, capsys, offers_bf16):
    # In this process (export_cli.main), so that OpenVINO's bf16 candidate is offered on any CPU (offers_bf16).
    from autograph import export_cli
    from autograph._library import openvino_missing
    if openvino_missing():
        pytest.skip(f"no OpenVINO parts: {openvino_missing()}")
    inputs = tmp_path / "calibration.pt"
    torch.save([(torch.randn(1, 4, 8, 8),), (torch.randn(1, 4, 8, 8),)], inputs)
    capsys.readouterr()
    status = export_cli.main(["optimize", str(program), "-o", str(tmp_path / "o.pt2"), "--method", "sequential",
                              "--precision", "bf16", "--tolerance", "0.1", "--calibration", str(inputs), "--accuracy",
                              measure, "--json"])
    out = capsys.readouterr()
    assert status == 0, out.err
    contest = json.loads(out.out)["inductor"]
    assert contest["precision"]["asked"] == "bf16" and contest["precision"]["tolerance"] == 0.1
    assert contest["precision"]["accuracy"] == measure
    assert len(contest["candidates"]["whole_openvino_bf16"]["measured"]) == 3  # the example's and two more
    # bfloat16 on this small network is far within 0.1 of the scale (test_precision.py): judged on both inputs
    assert contest["candidates"]["whole_openvino_bf16"]["calibration_inputs"] == 2


def test_bad_calibration_files_are_one_line_errors_before_any_work(program, tmp_path):
    r = _autograph("optimize", program, "-o", tmp_path / "o.pt2", "--calibration", tmp_path / "absent.pt")
    assert r.returncode == 2 and _error(r) == f"autograph: error: --calibration {tmp_path / 'absent.pt'}: no such file"
    junk = tmp_path / "junk.pt"
    junk.write_bytes(b"not a torch file")
    r = _autograph("optimize", program, "-o", tmp_path / "o.pt2", "--calibration", junk)
    assert r.returncode == 2 and "not a file of input tuples" in _error(r) and "torch.save" in _error(r), r.stderr
    wrong = tmp_path / "wrong.pt"
    torch.save([(torch.randn(2, 4, 8, 8),)], wrong)  # another shape than the example's
    r = _autograph("optimize", program, "-o", tmp_path / "o.pt2", "--precision", "bf16", "--calibration", wrong)
    assert r.returncode == 2 and "calibration[0], input 0" in _error(r), r.stderr
    assert not (tmp_path / "o.pt2").exists()
