"""optimize stopped by Ctrl-C while it compiles the model's parts, then run again on the same disk cache.

Each run is a process in a process group of its own, as a shell's foreground job, and Ctrl-C is SIGINT
to that group. It lands once while OpenVINO converts the whole graph (the converter process is up,
waiting for the ONNX model that optimize still exports) and once while Inductor compiles the whole graph.
Each time the process must end by KeyboardInterrupt, not hang, leave no process it started running (the
converter runs in a session of its own, out of Ctrl-C's reach), and leave the cache folder
(export/cache.py) with whole entries only and no converter's folder behind. Then optimize runs to the
end on that cache, and its output matches eager's.

Inductor's own cache is a fresh folder too, so its compile is cold and long enough to be interrupted.
Tolerance: 1e-4 of the output's scale, as test_part_cache.py (compilers fold and reorder in float32; a
wrong part moves outputs by order 1)."""
import contextlib
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Dict, List, Set

import pytest

from autograph.export import cache as part_cache
from autograph._library import openvino_missing

ROOT = Path(__file__).resolve().parents[2]
TOL = 1e-4
# How long a step may take before the test calls it a hang: far above what it needs here.
STARTUP_TIMEOUT_S = 120.0
EXIT_TIMEOUT_S = 60.0
OPTIMIZE_TIMEOUT_S = 300.0

# The child: a small convolution network, optimized with progress lines on stdout; "ok <error>" at the end.
OPTIMIZE = f"""
import logging, sys, torch
sys.path.insert(0, {str(ROOT / 'python')!r})
import autograph
handler = logging.StreamHandler(sys.stdout)
handler.setFormatter(logging.Formatter("%(message)s"))
logging.getLogger("autograph").addHandler(handler)
logging.getLogger("autograph").setLevel(logging.INFO)
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3, padding=1), torch.nn.ReLU(), torch.nn.Flatten(),
                            torch.nn.Linear(8 * 16 * 16, 4)).eval()
x = torch.randn(1, 3, 16, 16)
with torch.no_grad():
    want = model(x)
optimized, report = autograph.optimize(torch.export.export(model, (x,)), (x,), method="sequential")
got = optimized.module()(x)
print("ok", ((got - want).abs().max() / want.abs().max()).item(), report["inductor"]["kept"], flush=True)
"""
CONVERTER = "openvino_convert.py"  # in the converter process's command line (openvino._converter_command)
OPENVINO_STARTED = re.compile(r"compiling .* with OpenVINO")
INDUCTOR_STARTED = re.compile(r"compiling .* with Inductor")
ISA_ANSWERS = "vec-isa-checks.json"  # the toolchain's answers, kept beside the packages (compilers/toolchain.py)


class Run:
    """One optimize process: its stdout lines as they come, and every process it started (seen by polling
    /proc while it runs, as an orphan's parent is not its starter any more)."""

    def __init__(self, env: Dict[str, str]):
        # -X faulthandler: a crash instead of the KeyboardInterrupt leaves its threads' stacks in stderr.
        self.process = subprocess.Popen([sys.executable, "-X", "faulthandler", "-c", OPTIMIZE], env=env,
                                        start_new_session=True,
                                        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.lines: List[str] = []
        self.stderr = ""
        self.started: Dict[int, str] = {}  # pid -> command line when first seen
        self._readers = [threading.Thread(target=self._read_stdout, daemon=True),
                         threading.Thread(target=self._read_stderr, daemon=True)]
        for reader in self._readers:
            reader.start()

    def _read_stdout(self) -> None:
        for line in self.process.stdout:
            self.lines.append(line.rstrip("\n"))

    def _read_stderr(self) -> None:
        self.stderr = self.process.stderr.read()

    def poll_children(self) -> None:
        for pid in _descendants(self.process.pid):
            if pid not in self.started:
                self.started[pid] = _cmdline(pid)

    def wait_until(self, said: re.Pattern, converter_up: bool = False) -> None:
        """Waits until the process said `said` on a line (and, with `converter_up`, its OpenVINO converter
        runs); fails where it ends or takes too long first."""
        deadline = time.monotonic() + STARTUP_TIMEOUT_S
        while True:
            self.poll_children()
            if any(said.search(line) for line in self.lines) and \
                    (not converter_up or any(CONVERTER in cmd and _running(pid) for pid, cmd in self.started.items())):
                return
            assert self.process.poll() is None, f"optimize ended before {said.pattern}: {self.stderr[-3000:]}"
            assert time.monotonic() < deadline, f"no {said.pattern} in {STARTUP_TIMEOUT_S:g} s: {self.lines}"
            time.sleep(0.02)

    def interrupt(self) -> int:
        """Ctrl-C: SIGINT to the process group. Returns the exit status, once stdout and stderr are read."""
        os.killpg(self.process.pid, signal.SIGINT)
        return self.finish(EXIT_TIMEOUT_S)

    def finish(self, timeout: float) -> int:
        deadline = time.monotonic() + timeout
        while self.process.poll() is None:
            self.poll_children()
            if time.monotonic() > deadline:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait()
                pytest.fail(f"optimize did not end in {timeout:g} s: {self.lines}")
            time.sleep(0.02)
        for reader in self._readers:
            reader.join(timeout=10)
        return self.process.returncode

    def kill(self) -> None:
        """Stops the process and what it started, where they still run (a failed assertion must not
        leave an optimize behind)."""
        if self.process.poll() is None:
            self.poll_children()
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()
        for pid in self.started:
            if _running(pid):
                with contextlib.suppress(OSError):
                    os.kill(pid, signal.SIGKILL)

    def left_running(self) -> Dict[int, str]:
        """The processes it started that still run a while after it ended (a killed one may take a
        moment to go)."""
        deadline = time.monotonic() + 10
        while True:
            alive = {pid: cmd for pid, cmd in self.started.items() if _running(pid)}
            if not alive or time.monotonic() > deadline:
                return alive
            time.sleep(0.05)


def _stat_fields(pid: int) -> List[str]:
    """/proc/PID/stat's fields after the command name: state, parent pid, ..."""
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()


def _descendants(root: int) -> Set[int]:
    parent = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                parent[int(entry)] = int(_stat_fields(int(entry))[1])
            except (OSError, IndexError, ValueError):  # gone meanwhile
                continue
    found, frontier = set(), {root}
    while frontier:
        frontier = {pid for pid, ppid in parent.items() if ppid in frontier} - found
        found |= frontier
    return found


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def _running(pid: int) -> bool:
    """Whether process `pid` runs (a zombie, ended and not yet reaped, does not)."""
    try:
        return _stat_fields(pid)[0] != "Z"
    except (OSError, IndexError):
        return False


def damaged_or_partial(folder: Path) -> List[str]:
    """What in the cache folder is not a whole entry (``<key>.<sha256 prefix><suffix>`` whose bytes match
    its name, as cache.read checks) or the toolchain's answers beside them: a partial file, a damaged
    entry, or something else a killed writer left."""
    wrong = []
    for path in sorted(folder.iterdir()) if folder.exists() else []:
        fields = path.name.split(".")
        if path.name == ISA_ANSWERS:
            continue
        if ".partial" in path.name or len(fields) != 3 or not path.is_file() or \
                part_cache.sha256_of(path.read_bytes())[:16] != fields[1]:
            wrong.append(path.name)
    return wrong


def _env(tmp_path: Path) -> Dict[str, str]:
    (tmp_path / "tmp").mkdir(exist_ok=True)
    (tmp_path / "cache").mkdir(exist_ok=True)
    # Inductor's checks of this CPU, as the toolchain recorded them in the cache these tests run with:
    # without them a fresh cache pays them again, the longest part of a small model's optimize.
    answers = Path(part_cache.cache_dir()) / ISA_ANSWERS
    if answers.is_file():
        shutil.copyfile(answers, tmp_path / "cache" / ISA_ANSWERS)
    return dict(os.environ, AUTOGRAPH_CACHE_DIR=str(tmp_path / "cache"), TMPDIR=str(tmp_path / "tmp"),
                TORCHINDUCTOR_CACHE_DIR=str(tmp_path / "inductor"))


def _assert_interrupted_cleanly(run: Run, status: int, tmp_path: Path, where: str) -> None:
    """`where`: a function of the compile that the traceback must pass through (the interrupt landed in it)."""
    assert status == -signal.SIGINT and "KeyboardInterrupt" in run.stderr.strip().splitlines()[-1], \
        (status, run.stderr[-3000:])
    assert re.search(rf", in ({where})\n", run.stderr), f"the interrupt did not land in {where}: {run.stderr[-3000:]}"
    assert not any(line.startswith("ok") for line in run.lines), run.lines
    assert run.left_running() == {}
    assert damaged_or_partial(tmp_path / "cache") == []
    assert not list((tmp_path / "tmp").glob("autograph-openvino-*"))  # the converter's folders


@pytest.fixture
def runs():
    """The test's Runs (append each), killed at its end where they still run."""
    started: List[Run] = []
    yield started
    for run in started:
        run.kill()


def test_optimize_interrupted_while_compiling_leaves_nothing_that_breaks_the_next(tmp_path, runs):
    env = _env(tmp_path)
    if openvino_missing() is None:  # else optimize has no OpenVINO candidate: Inductor's compile alone
        converting = Run(env)
        runs.append(converting)
        converting.wait_until(OPENVINO_STARTED, converter_up=True)
        _assert_interrupted_cleanly(converting, converting.interrupt(), tmp_path, "start_package")

    compiling = Run(env)
    runs.append(compiling)
    compiling.wait_until(INDUCTOR_STARTED)
    time.sleep(0.5)  # well inside Inductor's compile, which takes seconds with its cache empty
    # Just in time beside OpenVINO's candidate, else ahead of time into the cache's partial file.
    _assert_interrupted_cleanly(compiling, compiling.interrupt(), tmp_path, "compile_just_in_time|compile_graph_module")

    again = Run(env)
    runs.append(again)
    status = again.finish(OPTIMIZE_TIMEOUT_S)
    assert status == 0, again.stderr[-3000:]
    (ok,) = [line.split() for line in again.lines if line.startswith("ok")]
    assert float(ok[1]) <= TOL, ok
    assert again.left_running() == {}
    assert damaged_or_partial(tmp_path / "cache") == []
    assert [p for p in (tmp_path / "cache").iterdir() if p.suffix in (".pt2", ".ovpart")]  # its compiles, whole


def test_the_cache_check_sees_a_partial_or_damaged_entry(tmp_path, monkeypatch):
    """damaged_or_partial, which the test above relies on, flags what a killed writer could leave."""
    folder = tmp_path / "cache"
    monkeypatch.setenv("AUTOGRAPH_CACHE_DIR", str(folder))
    with part_cache.writing("k1", ".pt2") as partial:
        Path(partial).write_bytes(b"a whole package")
    part_cache.commit(partial, "k1", ".pt2")
    (folder / ISA_ANSWERS).write_text("{}")
    assert damaged_or_partial(folder) == []
    leftover = Path(part_cache.partial_path("k2", ".ovpart"))
    leftover.write_bytes(b"half")
    assert damaged_or_partial(folder) == [leftover.name]
    leftover.unlink()
    (entry,) = folder.glob("k1.*")
    entry.write_bytes(b"a whole packagf")
    assert damaged_or_partial(folder) == [entry.name]


def test_ctrl_c_while_the_onnx_exporter_imports_is_held_back_then_raised():
    """A KeyboardInterrupt raised inside a C extension's module initialization (protobuf's, which
    torch.onnx's exporter imports) crashed the optimizing process: the interrupt waits for the import."""
    from autograph.export.compilers.converter_process import interrupts_held
    before = signal.getsignal(signal.SIGINT)
    finished = False
    with pytest.raises(KeyboardInterrupt):
        with interrupts_held():
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(0.1)  # Python runs a handler at once: had it raised, the body would stop here
            finished = True
    assert finished and signal.getsignal(signal.SIGINT) is before


# A process that starts a converter process running a stand-in that would convert for a minute, prints the
# converter's pid, then waits to be killed.
STARTS_A_CONVERTER = f"""
import sys, time
sys.path.insert(0, {str(ROOT / 'python')!r})
from autograph.export.compilers import converter_process
converter = converter_process.Converter("Stand-in", sys.argv[1], b"STANDIN", ".standin", 120.0)
pending = converter_process.start_process(converter, "0" * 32)
print(pending._process.pid, flush=True)
time.sleep(120)
"""


def _ended(pid: int) -> bool:
    """Whether process `pid` has exited (gone, or a zombie nobody reaped yet)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] == "Z"
    except FileNotFoundError:
        return True


def test_a_converter_ends_when_the_process_that_started_it_is_killed(tmp_path):
    # SIGKILL (or SIGTERM: no handler runs either way) leaves no time to stop the converter, whose session
    # is its own; it must not go on converting on the cores for its timeout, nor leave its folder behind.
    stand_in = tmp_path / "slow_converter.py"
    stand_in.write_text("import time\ntime.sleep(120)\n")
    temp = tmp_path / "tmp"  # where the converter's folder is made
    temp.mkdir()
    env = dict(os.environ, AUTOGRAPH_CACHE_DIR=str(tmp_path / "cache"), TMPDIR=str(temp))
    parent = subprocess.Popen([sys.executable, "-c", STARTS_A_CONVERTER, str(stand_in)], env=env,
                              stdout=subprocess.PIPE, text=True)
    try:
        child = int(parent.stdout.readline())
        time.sleep(1.0)
        assert not _ended(child)  # converting while its starter lives
        assert len(list(temp.glob("autograph-standin-*"))) == 1
        parent.kill()
        parent.wait(timeout=EXIT_TIMEOUT_S)
        deadline = time.monotonic() + 10.0
        while not _ended(child) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert _ended(child), "the converter outlived the process that started it"
        assert not list(temp.glob("autograph-standin-*")), "the converter left its folder"
    finally:
        parent.kill()
        with contextlib.suppress(Exception):
            os.kill(child, signal.SIGKILL)
