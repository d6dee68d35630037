"""`autograph calibrate`: fits a device model on squeezenet (small input, CPU) and writes JSON that
`DeviceModel::ByName` loads; bad paths give one clear error line."""
import json
import os
import subprocess

import pytest


def run(cli, *args):
    return subprocess.run([cli, *map(str, args)], capture_output=True, text=True, timeout=300)


def test_calibrate_writes_a_fitted_device_model(cli, zoo, tmp_path):
    out = tmp_path / "cpu.json"
    cache = tmp_path / "costs.json"
    args = ["calibrate", zoo / "squeezenet.pt", "--input-shape", "1,3,32,32", "--device", "cpu",
            "--device-model", "cpu", "-o", out, "--cache", cache, "--warmup", "1", "--repeats", "5", "--json"]
    r = run(cli, *args)
    assert r.returncode == 0, r.stderr
    report = json.loads(r.stdout)
    assert report["output"] == str(out)
    assert report["operators"] > 20
    assert report["measurements"] > 0
    assert report["error_after"]["rms"] <= report["error_before"]["rms"] + 1e-12
    # Concurrency: pairs of independent operators (a fire module's two expand convolutions) timed as
    # one stage; the fitted price of an extra group never fits them worse than the preset's.
    assert report["stages"] >= 2
    assert report["stage_error_after"]["rms"] <= report["stage_error_before"]["rms"] + 1e-12
    assert report["fitted"]["sync_us"] >= 0
    assert report["stitched_groups"] == 0  # squeezenet's ReLUs sit alone between convolutions
    fitted = json.loads(out.read_text())
    assert fitted["sync_us"] == report["fitted"]["sync_us"]
    assert fitted["version"] == 2 and fitted["name"] == "cpu-calibrated"
    assert 0 < fitted["efficiency"]["gemm"] <= 1
    assert json.loads(cache.read_text())["version"] == 1

    # Again from the fitted file, with the cache: nothing left to measure.
    again_args = list(args)
    again_args[again_args.index("--device-model") + 1] = out
    again_args[again_args.index("-o") + 1] = tmp_path / "again.json"
    again = run(cli, *again_args)
    assert again.returncode == 0, again.stderr
    assert json.loads(again.stdout)["measurements"] == 0
    assert json.loads((tmp_path / "again.json").read_text())["name"] == "cpu-calibrated"

    text = run(cli, "calibrate", zoo / "squeezenet.pt", "--input-shape", "1,3,32,32", "-o", tmp_path / "t.json",
               "--cache", "none", "--warmup", "0", "--repeats", "2")
    assert text.returncode == 0, text.stderr
    assert "median" in text.stdout and "wrote" in text.stdout and "sync_us" in text.stdout


def test_calibration_without_output_is_the_default_for_this_device(cli, zoo, tmp_path):
    # No -o: the fitted model goes to the cache, and optimize (no --device-model) plans with it.
    env = dict(os.environ, XDG_CACHE_HOME=str(tmp_path / "cache"))
    r = subprocess.run([cli, "calibrate", zoo / "squeezenet.pt", "--input-shape", "1,3,32,32", "--device", "cpu",
                        "--cache", "none", "--warmup", "0", "--repeats", "2", "--json"],
                       capture_output=True, text=True, timeout=300, env=env)
    assert r.returncode == 0, r.stderr
    written = json.loads(r.stdout)["output"]
    assert written.startswith(str(tmp_path / "cache" / "autograph" / "device_models")), written
    assert json.loads(open(written).read())["name"] == "cpu-calibrated"
    o = subprocess.run([cli, "optimize", zoo / "squeezenet.pt", "-o", tmp_path / "out.pt", "--method", "ios",
                        "--input-shape", "1,3,32,32", "--no-check-rewrites", "--json"],
                       capture_output=True, text=True, timeout=300, env=env)
    assert o.returncode == 0, o.stderr
    assert json.loads(o.stdout.strip().splitlines()[-1])["cost"] == "analytical:cpu-calibrated"
    # Without the calibration, the preset.
    env["XDG_CACHE_HOME"] = str(tmp_path / "empty")
    o = subprocess.run([cli, "optimize", zoo / "squeezenet.pt", "-o", tmp_path / "out.pt", "--method", "ios",
                        "--input-shape", "1,3,32,32", "--no-check-rewrites", "--json"],
                       capture_output=True, text=True, timeout=300, env=env)
    assert json.loads(o.stdout.strip().splitlines()[-1])["cost"] == "analytical:cpu"


@pytest.mark.parametrize("args, needle", [
    (["/nonexistent/model.pt", "-o", "{tmp}/x.json"], "no such file"),
    (["{squeezenet}", "--input-shape", "1,3,32,32", "--device-model", "{tmp}/missing.json", "-o", "{tmp}/x.json"],
     "does not exist"),
    (["{squeezenet}", "--input-shape", "1,3,32,32", "--cache", "none", "--repeats", "1", "--warmup", "0",
      "-o", "/nonexistent/dir/x.json"], "cannot write"),
])
def test_bad_paths_give_one_error_line(cli, zoo, tmp_path, args, needle):
    args = [a.format(tmp=tmp_path, squeezenet=zoo / "squeezenet.pt") for a in args]
    r = run(cli, "calibrate", *args)
    assert r.returncode == 2, (r.returncode, r.stderr)
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1, r.stderr
    assert lines[0].startswith("autograph: error: ") and needle in lines[0], lines[0]


def test_calibration_measures_stitched_groups_as_optimize_plans_them(cli, zoo, tmp_path):
    # RNNTC-SRU's gate arithmetic stitches into a few kernels: they are measured among the operators
    # (--no-stitch measures the operators as loaded).
    args = ["calibrate", zoo / "rnntc_sru.pt", "--device", "cpu", "--cache", "none", "--warmup", "0",
            "--repeats", "2", "--json"]
    stitched = run(cli, *args, "-o", tmp_path / "s.json")
    assert stitched.returncode == 0, stitched.stderr
    loaded = run(cli, *args, "-o", tmp_path / "l.json", "--no-stitch")
    assert loaded.returncode == 0, loaded.stderr
    s, l = json.loads(stitched.stdout), json.loads(loaded.stdout)
    assert s["stitched_groups"] > 0 and l["stitched_groups"] == 0
    assert s["operators"] < l["operators"]
    # Only the stitched groups can move the stitch overhead off the preset's.
    assert l["fitted"]["stitch_overhead_us"] == 5.0
    assert s["fitted"]["stitch_overhead_us"] >= 0
