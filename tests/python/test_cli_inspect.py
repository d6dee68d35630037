"""`autograph inspect`: JSON contract of docs/design.md and one clear error line for bad input."""
import json
import subprocess

import pytest

INSPECT_KEYS = {"model", "operators", "edges", "width", "critical_path_ops", "critical_path_flops",
                "flops", "ops_by_kind"}


def run(cli, *args):
    return subprocess.run([cli, *map(str, args)], capture_output=True, text=True, timeout=120)


def test_json_has_the_contract_keys(cli, zoo):
    r = run(cli, "inspect", zoo / "squeezenet.pt", "--json")
    assert r.returncode == 0, r.stderr
    stats = json.loads(r.stdout)
    assert INSPECT_KEYS <= stats.keys()
    # SqueezeNet 1.0: 26 convolutions, expand 1x1 and 3x3 side by side in each fire module.
    assert stats["ops_by_kind"]["compute"] == 26
    assert stats["width"] == 2
    assert stats["operators"] == sum(stats["ops_by_kind"].values())
    assert 0 < stats["critical_path_flops"] <= stats["flops"]


def test_explicit_shape_overrides_json_and_dot_is_written(cli, zoo, tmp_path):
    dot = tmp_path / "g.dot"
    r = run(cli, "inspect", zoo / "squeezenet.pt", "--input-shape", "2,3,128,128", "--json", "--dot", dot)
    assert r.returncode == 0, r.stderr
    small = json.loads(r.stdout)
    full = json.loads(run(cli, "inspect", zoo / "squeezenet.pt", "--json").stdout)
    assert small["operators"] == full["operators"]
    assert small["flops"] != full["flops"]
    text = dot.read_text()
    assert text.startswith("digraph") and text.count("->") == small["edges"]


def test_text_output(cli, zoo):
    r = run(cli, "inspect", zoo / "resnet50.pt")
    assert r.returncode == 0, r.stderr
    assert "width              2" in r.stdout and "4.1G MAC" in r.stdout


@pytest.mark.parametrize("args, needle", [
    (["/nonexistent/model.pt"], "no such file"),
    (["{garbage}"], "not a loadable TorchScript file"),
    (["{squeezenet}", "--input-shape", "1,3,x"], "bad input shape"),
    (["{squeezenet}", "--input-shape", "1,5,64,64"], "check that the inputs match"),
    (["{squeezenet}", "--input-shape", "1,3,64,64", "--input-shape", "1,3,64,64"], "takes 1 input"),
    (["{squeezenet}", "--input-shape", "1,3,64,64", "--dtype", "int64"], "failed"),
    (["{bare}"], "no example input shapes"),
])
def test_bad_input_gives_one_error_line(cli, zoo, tmp_path, args, needle):
    garbage = tmp_path / "garbage.pt"
    garbage.write_text("not a model")
    bare = tmp_path / "bare.pt"  # a model with no NAME.json beside it
    bare.write_bytes((zoo / "squeezenet.pt").read_bytes())
    args = [a.format(garbage=garbage, squeezenet=zoo / "squeezenet.pt", bare=bare) for a in args]
    r = run(cli, "inspect", *args)
    assert r.returncode == 2, (r.returncode, r.stderr)
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1, r.stderr
    assert lines[0].startswith("autograph: error: ") and needle in lines[0], lines[0]
    assert r.stdout == ""
