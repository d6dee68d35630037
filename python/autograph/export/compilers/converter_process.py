"""A part converted by a compiler in a Python process of its own (OpenVINO's, ONNX Runtime's), beside the
other compilers' work in this one: the process is started, handed the part, waited for with a timeout,
killed with whatever it started when it hangs or is no longer wanted, and what it wrote becomes a cache
entry only when it is a whole package. Where the process cannot start or fails with an error, the
conversion runs in this process instead (`here`); where it crashes (killed by a signal), the candidate is
dropped, since the same compiler here would likely crash this process. A converter whose file reads its
package's path from its stdin may start before its part is known (Spare): it imports its compiler
meanwhile."""
import contextlib
import importlib
import logging
import os
import signal
import struct
import subprocess
import sys
import tempfile
import threading
from typing import Dict, Iterator, List, Optional

from ...errors import Error
from .. import cache as part_cache

logger = logging.getLogger("autograph")

# A converter's file run as __main__ without importing autograph (whose import loads its libraries) and
# without its folder on sys.path (where this package's modules would shadow the compilers' own packages).
# Its session is its own (start_process), so a signal that ends autograph's process at once (SIGKILL,
# SIGTERM) would leave it converting on the cores until its timeout: it ends itself within a second once
# the process that started it (PARENT_ENV) is gone, and removes its folder, which that one would have.
PARENT_ENV = "AUTOGRAPH_CONVERTER_PARENT"
_RUN_FILE = ("import os, runpy, shutil, sys, threading, time\n"
             f"parent = int(os.environ.get({PARENT_ENV!r}, os.getppid()))\n"
             "folder = sys.argv[2]\n"
             "def orphaned():\n"
             "    while os.getppid() == parent:\n"
             "        time.sleep(0.5)\n"
             "    shutil.rmtree(folder, ignore_errors=True)\n"
             "    os._exit(1)\n"
             "threading.Thread(target=orphaned, daemon=True).start()\n"
             "sys.argv = sys.argv[1:]\n"
             "runpy.run_path(sys.argv[0], run_name='__main__')\n")


# The PATH argument of a converter started before its part is known (Spare): it reads the path from the
# first line of its stdin, after importing its compiler.
PATH_ON_STDIN = "-"


class Converter:
    """What one compiler's conversion is: its name (messages), its converter's file (run as the process,
    with the arguments FOLDER PATH), its packages' magic bytes and cache suffix, and how long the process
    may take (a hung one must not hang optimize). `sized`: its packages' magic is followed by the first
    section's byte count (8 bytes, little-endian), which a whole package holds at least. `env`: more
    environment for the process. `early`: its file takes PATH_ON_STDIN for PATH (it may be a Spare)."""

    def __init__(self, name: str, script: str, magic: bytes, suffix: str, timeout_s: float, sized: bool = True,
                 env: Optional[Dict[str, str]] = None, early: bool = False):
        self.name, self.script, self.magic, self.suffix, self.timeout_s = name, script, magic, suffix, timeout_s
        self.sized, self.env, self.early = sized, dict(env or {}), early


class PendingPackage:
    """A package being made by a converter process (start), or read from the cache (`package`):
    `result()` waits for it and returns its bytes; `close()` stops what is still running and removes what
    it wrote. Whatever fails, result() raises it."""

    def __init__(self, converter: Optional[Converter] = None, path: str = "", here=None,
                 process: Optional[subprocess.Popen] = None, folder: Optional[tempfile.TemporaryDirectory] = None,
                 sender: Optional[threading.Thread] = None, entry: str = "", package: Optional[bytes] = None):
        # `path`: the cache's partial file for `entry`, which the package is written to. `here` converts
        # in this process: where no converter process runs, or where it failed. `sender` writes the part
        # to the process's stdin.
        self._converter = converter
        self._path, self._here, self._process, self._folder, self._sender = path, here, process, folder, sender
        self._entry, self._package = entry, package
        self._head: List[bytes] = []  # sent before the part: the path, to a process started without it (bind)

    @property
    def path(self) -> str:
        """Where the package is written (the cache entry's partial file), by the process or here."""
        return self._path

    def bind(self, entry: str) -> None:
        """The cache's entry `entry` for a process started without one (start_process): its package's path
        goes to the process first."""
        self._entry, self._path = entry, part_cache.partial_path(entry, self._converter.suffix)
        self._head = [self._path.encode() + b"\n"]

    def converts_here(self, here) -> None:
        """`here` converts the part in this process where the converter process is missing or fails with an
        error (not where it crashes)."""
        self._here = here

    def send(self, *chunks: bytes) -> None:
        """`chunks` (a large model's bytes: the writes release the GIL) sent to the converter process from a
        thread, so that this one goes on at once; only the thread keeps them. Nothing where no process runs."""
        if self._process is None:
            return
        self._sender = threading.Thread(target=tell, args=(self._process, *self._head, *chunks),
                                        name="autograph-converter-sender", daemon=True)
        self._sender.start()

    def result(self) -> bytes:
        if self._package is None:
            try:
                self._finish()
            except BaseException:
                self.close()
                raise
            self.close(keep=True)
            try:
                check_package(self._path, self._converter)
            except BaseException:
                self.close()
                raise
            self._package = part_cache.commit(self._path, self._entry, self._converter.suffix)
        return self._package

    def _finish(self) -> None:
        if self._process is not None:
            try:
                status = self._process.wait(timeout=self._converter.timeout_s)
            except subprocess.TimeoutExpired:
                raise Error(f"{self._converter.name}'s converter process did not finish in "
                            f"{self._converter.timeout_s:g} s; it was stopped and the candidate dropped") from None
            if status == 0 and os.path.exists(self._path):
                return
            with open(os.path.join(self._folder.name, "stderr.txt"), errors="replace") as f:
                said = f.read().strip().splitlines()[-1:]
            if status < 0:  # killed by a signal: the same compiler here would likely take this process down too
                raise Error(f"{self._converter.name}'s converter process crashed ({_signal_name(-status)}"
                            f"{': ' + said[0] if said else ''}) on the part; the candidate is dropped")
            # A model the converter's process cannot load (a custom op): this process may.
            if self._here is None:
                raise Error(f"{self._converter.name}'s converter process failed ({'; '.join(said) or status}); "
                            "the candidate is dropped")
            logger.info("autograph: %s's converter process failed (%s); converting here", self._converter.name, said)
        if self._here is None:
            raise Error(f"{self._converter.name}'s converter process failed and nothing converts the part here")
        self._here()

    def close(self, keep: bool = False) -> None:
        """Stops the converter process and removes its files (and the package written so far, unless
        `keep`: result() commits it)."""
        if self._process is not None:
            kill_group(self._process)  # first: a sender still writing then stops
            self._process.wait()
            if self._sender is not None:
                self._sender.join()
            tell(self._process)
            with contextlib.suppress(OSError):  # what a killed converter was writing
                os.remove(f"{self._path}.{self._process.pid}.partial")
            self._process = None
        if self._folder is not None:
            self._folder.cleanup()
            self._folder = None
        if not keep and self._path and self._package is None:
            with contextlib.suppress(OSError):
                os.remove(self._path)


def _signal_name(number: int) -> str:
    """The signal's name ("SIGSEGV"), or its number where it has none."""
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


def converter_command(script: str, folder: str, path: str) -> List[str]:
    """How a converter process starts: this Python, running the converter's file (its sys.path[0] the
    process's folder, where nothing shadows a module). OSError where this process's executable is no
    Python interpreter (an embedding application): the conversion then runs here."""
    python = sys.executable
    if not python or not os.path.basename(python).lower().startswith(("python", "pypy")):
        raise OSError(f"{python!r} is not a Python interpreter")
    return [python, "-c", _RUN_FILE, script, folder, path]


def start_process(converter: Converter, entry: Optional[str]) -> PendingPackage:
    """The converter's process started for the cache's entry `entry` (it imports its compiler while this
    one exports the part; it writes the package at the entry's partial path), with its folder, or a
    PendingPackage with no process where it cannot start (converted here then). One thread for its own
    torch ops: the other cores are this process's compiles'. `entry` None (an early converter's): the
    process starts without its path, which bind() gives it."""
    if entry is None and not converter.early:
        raise ValueError(f"{converter.name}'s converter cannot start before its part is known")
    path = part_cache.partial_path(entry, converter.suffix) if entry is not None else ""
    folder = tempfile.TemporaryDirectory(prefix=f"autograph-{converter.suffix.strip('.')}-")
    process = None
    try:
        env = dict(os.environ, OMP_NUM_THREADS="1", **converter.env, **{PARENT_ENV: str(os.getpid())})
        with open(os.path.join(folder.name, "stderr.txt"), "wb") as stderr:
            # A session of its own: closing it kills what it started too (OpenVINO's telemetry forks).
            process = subprocess.Popen(converter_command(converter.script, folder.name, path or PATH_ON_STDIN), env=env,
                                       cwd=folder.name, start_new_session=True,
                                       stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=stderr)
    except OSError as e:  # no interpreter to run: converted here
        logger.info("autograph: %s's converter process did not start (%s); converting here", converter.name, e)
    return PendingPackage(converter, path, process=process, folder=folder, entry=entry or "")


class Spare:
    """An early converter's process (Converter.early) started before its first part is known, so that it
    imports its compiler (NNCF takes seconds) while this one works: take() hands it the first part's
    entry, once; close() stops it where nobody took it."""

    def __init__(self, converter: Converter):
        self._pending: Optional[PendingPackage] = start_process(converter, None)

    def take(self, entry: str) -> Optional[PendingPackage]:
        """The spare process bound to `entry` (PendingPackage.bind), or None where it was taken, closed, never
        started or has ended (the caller starts a process of its own)."""
        pending, self._pending = self._pending, None
        if pending is None:
            return None
        if pending._process is None or pending._process.poll() is not None:
            pending.close()
            return None
        pending.bind(entry)
        return pending

    def close(self) -> None:
        if self._pending is not None:
            self._pending.close()
            self._pending = None


def kill_group(process: subprocess.Popen) -> None:
    """Kills the converter process and whatever it started (its process group, see start_process)."""
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):  # gone already (a zombie's group may be empty)
        process.kill()


def check_package(path: str, converter: Converter) -> None:
    """Raises Error unless `path` holds a whole package (the converter's magic and more; where `sized`, the
    first section's byte count, then at least that many bytes): what a converter that printed garbage or
    stopped halfway wrote must not become a cache entry."""
    magic = converter.magic
    with open(path, "rb") as f:
        head = f.read(len(magic) + 8)
        size = os.fstat(f.fileno()).st_size
    whole = head.startswith(magic) and size > len(magic)
    if converter.sized:
        whole = whole and len(head) == len(magic) + 8 and size >= len(head) + struct.unpack("<Q", head[len(magic):])[0]
    if not whole:
        raise Error(f"{converter.name}'s converter wrote no whole package ({size} bytes); the candidate is dropped")


def tell(process: Optional[subprocess.Popen], *chunks: bytes) -> None:
    """`chunks` on the converter's stdin, which is then closed (a process that died already hears
    nothing: PendingPackage.result() then converts here)."""
    if process is None or process.stdin is None or process.stdin.closed:
        return
    with contextlib.suppress(OSError, ValueError):  # ValueError: closed by close() meanwhile
        for chunk in chunks:
            process.stdin.write(chunk)
    with contextlib.suppress(OSError, ValueError):
        process.stdin.close()


@contextlib.contextmanager
def interrupts_held() -> Iterator[None]:
    """Ctrl-C (SIGINT) held back while the body runs, then raised as KeyboardInterrupt: one raised inside
    a C extension's module initialization (protobuf's, which torch.onnx's exporter imports) crashed the
    interpreter instead. Only on the main thread, where Python runs signal handlers."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    caught = []
    previous = signal.signal(signal.SIGINT, lambda signum, frame: caught.append(signum))
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
    if caught:
        if callable(previous):
            previous(signal.SIGINT, None)
        else:
            raise KeyboardInterrupt


def exporter_imported() -> None:
    """torch.onnx's exporter and what it imports at its first export, imported with Ctrl-C held back
    (interrupts_held)."""
    with interrupts_held():
        for module in ("onnx", "onnxscript", "onnx_ir", "torch.onnx._internal.exporter._core"):
            with contextlib.suppress(ImportError):
                importlib.import_module(module)


__all__ = ["PATH_ON_STDIN", "Converter", "PendingPackage", "Spare", "check_package", "converter_command", "exporter_imported",
           "interrupts_held", "kill_group", "start_process", "tell"]
