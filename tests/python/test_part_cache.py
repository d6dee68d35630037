"""The disk cache of compiled parts (python/autograph/part_cache.py) and the export path under faults:
damaged, foreign, partial and concurrent entries, a full disk, an interrupt, a converter that hangs or
writes garbage. In every case a correct program or a clear error, and nothing left behind that makes
the next optimize fail.

Tolerance where outputs are compared: 1e-4 of the output's scale, as test_openvino_parts.py (OpenVINO
and Inductor fold and reorder in float32; a wrong part moves outputs by order 1)."""
import errno
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

import autograph
from autograph import errors
from autograph.export import cache as part_cache
from autograph.export.compilers import openvino as openvino_parts
from autograph._library import openvino_missing

ROOT = Path(__file__).resolve().parents[2]
TOL = 1e-4


@pytest.fixture
def cache(tmp_path, monkeypatch):
    folder = tmp_path / "cache"
    monkeypatch.setenv("AUTOGRAPH_CACHE_DIR", str(folder))
    monkeypatch.delenv("AUTOGRAPH_CACHE_MAX_GB", raising=False)
    return folder


def _put(key: str, data: bytes, suffix: str = ".pt2") -> part_cache.Package:
    with part_cache.writing(key, suffix) as partial:
        Path(partial).write_bytes(data)
    return part_cache.commit(partial, key, suffix)


def _entries(folder: Path):
    return sorted(p.name for p in folder.iterdir()) if folder.exists() else []


def test_a_key_names_kind_machine_versions_configuration_and_content(monkeypatch):
    cpu = torch.device("cpu")
    key = part_cache.key("aoti-part", cpu, {"inductor": {"freezing": True}}, "graph and weights")
    assert key == part_cache.key("aoti-part", cpu, {"inductor": {"freezing": True}}, "graph and weights")
    assert key != part_cache.key("openvino-part", cpu, {"inductor": {"freezing": True}}, "graph and weights")
    assert key != part_cache.key("aoti-part", cpu, {"inductor": {"freezing": False}}, "graph and weights")
    assert key != part_cache.key("aoti-part", cpu, {"inductor": {"freezing": True}}, "other weights")
    # Another CPU (its vector capability) or another torch: another key, never a foreign package.
    monkeypatch.setattr(torch.backends.cpu, "get_cpu_capability", lambda: "OTHER_ISA")
    assert key != part_cache.key("aoti-part", cpu, {"inductor": {"freezing": True}}, "graph and weights")
    monkeypatch.undo()
    monkeypatch.setattr(torch, "__version__", "0.0.0")
    assert key != part_cache.key("aoti-part", cpu, {"inductor": {"freezing": True}}, "graph and weights")


def test_an_entry_is_read_back_whole_with_its_digest(cache):
    package = _put("k1", b"package bytes")
    got = part_cache.read("k1", ".pt2")
    assert got == b"package bytes" and got.sha256 == package.sha256 == part_cache.sha256_of(b"package bytes")
    assert part_cache.contains("k1", ".pt2") and not part_cache.contains("k1", ".ovpart")
    assert part_cache.read("k2", ".pt2") is None


@pytest.mark.parametrize("damage", ["truncate", "garbage", "empty"])
def test_a_damaged_entry_is_dropped_not_returned(cache, damage):
    _put("k1", b"x" * 1000)
    (entry,) = cache.iterdir()
    data = {"truncate": b"x" * 500, "garbage": os.urandom(1000), "empty": b""}[damage]
    entry.write_bytes(data)
    assert part_cache.read("k1", ".pt2") is None
    assert _entries(cache) == []  # the next compile writes it anew


def test_a_new_entry_replaces_the_old_one_of_its_key(cache):
    _put("k1", b"first")
    _put("k1", b"second")  # a concurrent optimizer's own compile of the same part
    assert len(_entries(cache)) == 1 and part_cache.read("k1", ".pt2") == b"second"


@pytest.mark.parametrize("fault", [OSError(errno.ENOSPC, "No space left on device"), KeyboardInterrupt()])
def test_a_write_that_fails_leaves_nothing_behind(cache, fault):
    with pytest.raises(type(fault)):
        with part_cache.writing("k1", ".pt2") as partial:
            Path(partial).write_bytes(b"half a pack")
            raise fault
    assert _entries(cache) == [] and part_cache.read("k1", ".pt2") is None


def test_trim_sweeps_stale_partial_files_and_evicts_the_least_recently_used(cache):
    _put("old", b"a" * 100)
    _put("mid", b"b" * 100)
    _put("new", b"c" * 100)
    stale = cache / "dead.123.abcd.partial.pt2"  # a crashed writer's
    fresh = cache / "live.456.abcd.partial.pt2"  # a writer at work
    stale.write_bytes(b"s")
    fresh.write_bytes(b"f")
    hours_ago = time.time() - 2 * part_cache.STALE_PARTIAL_S
    os.utime(stale, (hours_ago, hours_ago))
    for i, name in enumerate(["old", "mid", "new"]):
        (entry,) = cache.glob(name + ".*")
        os.utime(entry, (hours_ago + i, hours_ago + i))
    assert part_cache.read("old", ".pt2") is not None  # used now: the most recent
    removed = part_cache.trim(limit=250)
    assert stale.name in removed and fresh.exists()
    assert part_cache.read("mid", ".pt2") is None  # the least recently used went
    assert part_cache.read("old", ".pt2") is not None and part_cache.read("new", ".pt2") is not None


def test_the_size_bound_is_read_from_the_environment(cache, monkeypatch):
    assert part_cache.max_bytes() == int(part_cache.DEFAULT_MAX_GB * 2**30)
    monkeypatch.setenv("AUTOGRAPH_CACHE_MAX_GB", "0.5")
    assert part_cache.max_bytes() == 2**29
    for bad in ("lots", "-1", "nan"):
        monkeypatch.setenv("AUTOGRAPH_CACHE_MAX_GB", bad)
        with pytest.raises(errors.InputError, match="AUTOGRAPH_CACHE_MAX_GB"):
            part_cache.max_bytes()


class Block(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 8, 3, padding=1)
        self.head = torch.nn.Linear(8, 4)

    def forward(self, x):
        return self.head(torch.relu(self.conv(x)).mean((2, 3)))


@pytest.fixture(scope="module")
def block():
    torch.manual_seed(0)
    model = Block().eval()
    x = torch.randn(1, 3, 16, 16)
    with torch.no_grad():
        want = model(x)
    return model, x, want


def _close(got, want):
    assert (got - want).abs().max().item() <= TOL * want.abs().max().item()


def _optimize(block, **options):
    model, x, want = block
    optimized, report = autograph.optimize(torch.export.export(model, (x,)), (x,), method="sequential", **options)
    _close(optimized.module()(x), want)
    return report


def _damage_every_entry(folder: Path) -> int:
    entries = [p for p in folder.iterdir() if p.suffix in (".pt2", ".ovpart")]
    for k, p in enumerate(entries):
        data = p.read_bytes()
        p.write_bytes(data[: len(data) // 2] if k % 2 == 0 else os.urandom(len(data)))
    return len(entries)


def test_a_damaged_cache_entry_is_compiled_again_not_fatal(block, cache):
    """Every entry of a model truncated or overwritten: the next optimize compiles them again (correct
    outputs) and writes them whole, and the one after runs on them. Without ONNX Runtime's candidates:
    with them, whether a mix of compilers' parts is made (and its entries written) turns on each run's
    timings, and an entry of the first run's mix the second does not make is not read again."""
    first = _optimize(block, onnxruntime=False)
    assert first["inductor"]["kept"], first["inductor"]
    assert _damage_every_entry(cache) >= 1
    again = _optimize(block, onnxruntime=False)
    assert again["inductor"]["cached_parts"] == 0
    entries = [p for p in cache.iterdir() if p.suffix in (".pt2", ".ovpart")]
    assert entries
    for entry in entries:  # written anew, whole
        assert part_cache.sha256_of(entry.read_bytes()).startswith(entry.name.split(".")[1])
    _optimize(block, onnxruntime=False)


def test_two_processes_optimizing_one_model_at_once_are_both_correct(block, cache, tmp_path):
    model, x, want = block
    torch.save({"state": model.state_dict(), "x": x, "want": want}, tmp_path / "block.pt")
    script = f"""
import sys, torch
sys.path[:0] = [{str(ROOT / 'tests' / 'python')!r}, {str(ROOT / 'python')!r}]
import autograph
from test_part_cache import Block
saved = torch.load({str(tmp_path / 'block.pt')!r})
model = Block().eval()
model.load_state_dict(saved["state"])
optimized, report = autograph.optimize(torch.export.export(model, (saved["x"],)), (saved["x"],), method="sequential")
got = optimized.module()(saved["x"])
err = (got - saved["want"]).abs().max().item() / saved["want"].abs().max().item()
assert err <= {TOL}, err
print("ok", report["inductor"]["kept"])
"""
    env = dict(os.environ, AUTOGRAPH_CACHE_DIR=str(cache), OMP_NUM_THREADS="1")
    runs = [subprocess.Popen([sys.executable, "-c", script], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True) for _ in range(2)]
    for run in runs:
        out, err = run.communicate(timeout=600)
        assert run.returncode == 0 and out.startswith("ok"), err[-2000:]
    for entry in cache.iterdir():  # whole entries only, each intact
        assert ".partial" not in entry.name, _entries(cache)
    for entry in cache.glob("*.pt2"):
        key, digest = entry.name.split(".")[:2]
        assert part_cache.sha256_of(entry.read_bytes()).startswith(digest)


needs_openvino = pytest.mark.skipif(openvino_missing() is not None, reason=f"no OpenVINO parts: {openvino_missing()}")


def _part(block):
    model, x, _ = block
    from torch.fx.experimental.proxy_tensor import make_fx
    return make_fx(model)(x), (x,)


@needs_openvino
@pytest.mark.parametrize("converter, why", [
    ("import time\ntime.sleep(3600)\n", "did not finish"),
    ("import sys\nopen(sys.argv[2], 'wb').write(b'garbage')\n", "no whole package"),
])
def test_a_converter_that_hangs_or_writes_garbage_is_a_clear_error_and_leaves_nothing(block, cache, tmp_path,
                                                                                      monkeypatch, converter, why):
    script = tmp_path / "converter.py"
    script.write_text(converter)
    monkeypatch.setattr(openvino_parts._openvino_convert, "__file__", str(script))
    monkeypatch.setattr(openvino_parts, "CONVERT_TIMEOUT_S", 2.0)
    gm, examples = _part(block)
    pending = openvino_parts.start_package(gm, examples)
    process = pending._process
    start = time.monotonic()
    with pytest.raises(errors.Error, match=why):
        pending.result()
    assert time.monotonic() - start < 60 and process.poll() is not None
    assert _entries(cache) == []


@needs_openvino
def test_a_hung_converter_drops_openvinos_candidate_and_the_report_says_why(block, cache, tmp_path, monkeypatch):
    script = tmp_path / "converter.py"
    script.write_text("import time\ntime.sleep(3600)\n")
    monkeypatch.setattr(openvino_parts._openvino_convert, "__file__", str(script))
    monkeypatch.setattr(openvino_parts, "CONVERT_TIMEOUT_S", 2.0)
    report = _optimize(block)
    assert report["inductor"]["kept"] != "whole_openvino"
    assert "did not finish" in str(report["inductor"]), report["inductor"]
    assert not list(cache.glob("*.ovpart"))


@needs_openvino
def test_closing_a_converter_kills_what_it_started(block, cache, tmp_path, monkeypatch):
    """OpenVINO's telemetry forks from the converter process: closing the conversion leaves no process
    behind, the converter's children included."""
    pid_file = tmp_path / "child.pid"
    script = tmp_path / "converter.py"
    script.write_text("import subprocess, sys, time\n"
                      f"child = subprocess.Popen(['sleep', '3600'])\nopen({str(pid_file)!r}, 'w').write(str(child.pid))\n"
                      "time.sleep(3600)\n")
    monkeypatch.setattr(openvino_parts._openvino_convert, "__file__", str(script))
    gm, examples = _part(block)
    pending = openvino_parts.start_package(gm, examples)
    deadline = time.monotonic() + 60
    while not pid_file.exists() or not pid_file.read_text():
        assert time.monotonic() < deadline, "the converter did not start its child"
        time.sleep(0.05)
    child = int(pid_file.read_text())
    pending.close()
    deadline = time.monotonic() + 10
    while _running(child):
        assert time.monotonic() < deadline, "the converter's child outlived the conversion"
        time.sleep(0.05)


def _running(pid: int) -> bool:
    """Whether process `pid` runs (a zombie, killed and not yet reaped by its parent, does not)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (FileNotFoundError, ProcessLookupError):
        return False
