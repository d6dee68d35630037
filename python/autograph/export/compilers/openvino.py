"""Parts compiled by OpenVINO (export path, CPU): one more candidate compiler beside Inductor.

OpenVINO's CPU plugin runs some models well ahead of Inductor's C++ code (depthwise-separable and
NAS-style convolution networks such as nasnet_a_mobile: bench/results/export-path-2026-11-26d-cpu). A
part — today the whole graph — is exported to ONNX by torch.onnx in autograph's process and read by
OpenVINO (its PyTorch frontend where that export fails; see openvino_convert.py) in a Python process of
its own that runs beside Inductor's compile of the other candidates (start_package), serialized as IR
(XML and float32 weights, never compressed to float16) and packed into one uint8 tensor
(openvino_convert.save_package). In the program it becomes one ``autograph::run_openvino_part`` call,
which libautograph_openvino.so runs with the latency hint and the inference precision its spec names
(float32, or bf16 where option precision lowered it: the same package, lowered whole or part by part:
lowering.py). Like every candidate it is kept only where the whole program measures faster. Packages are cached on disk beside
Inductor's (export/cache.py), keyed by the part's graph, its weights and the OpenVINO and torch
versions.
"""
import contextlib
import functools
import importlib
import logging
import os
import signal
import struct
import subprocess
import sys
import tempfile
import threading
from typing import Any, Callable, Dict, Iterator, List, Optional, Sequence, Tuple

import torch

from ..._library import openvino_missing
from ...errors import Error
from .. import cache as part_cache
from . import openvino_convert as _openvino_convert
from .base import CompiledPart, part_digest, whole_graph_part

_SUFFIX = ".ovpart"
# How long the converter process may take: a hung one must not hang optimize (the candidate is then
# dropped, and the report says why). The largest models convert well within it.
CONVERT_TIMEOUT_S = 600.0

PART_OP = "autograph::run_openvino_part"
FORMAT = "autograph-openvino-part"
logger = logging.getLogger("autograph")


def missing() -> Optional[str]:
    """Why OpenVINO parts cannot be built and run in this process, or None where they can."""
    return openvino_missing()


def available() -> bool:
    """Whether OpenVINO parts can be built and run in this process (missing() says why not)."""
    return missing() is None


class PendingPackage:
    """An OpenVINO package being made (start_package), or read from the cache (`package`): `result()`
    waits for it and returns its bytes; `close()` stops what is still running and removes what it
    wrote. Whatever fails, result() raises it."""

    def __init__(self, path: str = "", here=None, process: Optional[subprocess.Popen] = None,
                 folder: Optional[tempfile.TemporaryDirectory] = None, sender: Optional[threading.Thread] = None,
                 entry: str = "", package: Optional[bytes] = None):
        # `path`: the cache's partial file for `entry`, which the package is written to. `here` converts
        # in this process: where no converter process runs, or where it failed. `sender` writes the part
        # to the process's stdin.
        self._path, self._here, self._process, self._folder, self._sender = path, here, process, folder, sender
        self._entry, self._package = entry, package

    def result(self) -> bytes:
        if self._package is None:
            try:
                self._finish()
            except BaseException:
                self.close()
                raise
            self.close(keep=True)
            try:
                _check_package(self._path)
            except BaseException:
                self.close()
                raise
            self._package = part_cache.commit(self._path, self._entry, _SUFFIX)
        return self._package

    def _finish(self) -> None:
        if self._process is not None:
            try:
                status = self._process.wait(timeout=CONVERT_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                raise Error(f"OpenVINO's converter process did not finish in {CONVERT_TIMEOUT_S:g} s; it was "
                            "stopped and the candidate dropped") from None
            if status == 0 and os.path.exists(self._path):
                return
            # A model the converter's process cannot load (a custom op): this process may.
            with open(os.path.join(self._folder.name, "stderr.txt"), errors="replace") as f:
                said = f.read().strip().splitlines()[-1:]
            logger.info("autograph: OpenVINO's converter process failed (%s); converting here", said)
        self._here()

    def close(self, keep: bool = False) -> None:
        """Stops the converter process and removes its files (and the package written so far, unless
        `keep`: result() commits it)."""
        if self._process is not None:
            _kill_group(self._process)  # first: a sender still writing then stops
            self._process.wait()
            if self._sender is not None:
                self._sender.join()
            _tell(self._process)
            with contextlib.suppress(OSError):  # what a killed converter was writing
                os.remove(f"{self._path}.{self._process.pid}.partial")
            self._process = None
        if self._folder is not None:
            self._folder.cleanup()
            self._folder = None
        if not keep and self._path and self._package is None:
            with contextlib.suppress(OSError):
                os.remove(self._path)


# The converter's file run as __main__ without importing autograph (whose import loads its libraries) and
# without its folder on sys.path (where this package's openvino.py would shadow OpenVINO's own).
_RUN_FILE = "import runpy, sys; sys.argv = sys.argv[1:]; runpy.run_path(sys.argv[0], run_name='__main__')"


def _converter_command(folder: str, path: str) -> List[str]:
    """How the converter process starts: this Python, running the converter's file (its sys.path[0] the
    process's folder, where nothing shadows a module). OSError where this process's executable is no
    Python interpreter (an embedding application): the conversion then runs here."""
    python = sys.executable
    if not python or not os.path.basename(python).lower().startswith(("python", "pypy")):
        raise OSError(f"{python!r} is not a Python interpreter")
    return [python, "-c", _RUN_FILE, _openvino_convert.__file__, folder, path]


def start(builder: Any, part: Sequence[int], label: str) -> Callable[[], Tuple[bytes, List[int], List[int]]]:
    """Starts making `part` of the graph of `builder` (an inductor.PartBuilder) an OpenVINO package
    (start_package: in a process of its own; its linears stay aten.linear); the returned call waits for
    it and returns it with the part's input / output ids. The builder's close stops a conversion nobody
    waited for."""
    gm, input_ids, output_ids = builder.module_of(part, pack_linear=False)
    pending = start_package(gm, builder.examples(input_ids), label, builder.progress, builder.weight_digests)
    builder.keep_until_close(pending)
    return lambda: (pending.result(), input_ids, output_ids)


def _kill_group(process: subprocess.Popen) -> None:
    """Kills the converter process and whatever it started (its process group, see start_package)."""
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):  # gone already (a zombie's group may be empty)
        process.kill()


def _check_package(path: str) -> None:
    """Raises Error unless `path` holds a whole package (openvino_convert.save_package's layout): what
    a converter that printed garbage or stopped halfway wrote must not become a cache entry."""
    magic = _openvino_convert.MAGIC
    with open(path, "rb") as f:
        head = f.read(len(magic) + 8)
        size = os.fstat(f.fileno()).st_size
    if len(head) < len(magic) + 8 or not head.startswith(magic) or \
            size < len(head) + struct.unpack("<Q", head[len(magic):])[0]:
        raise Error(f"OpenVINO's converter wrote no whole package ({size} bytes); the candidate is dropped")


def start_package(gm: torch.fx.GraphModule, examples: Sequence[torch.Tensor], label: str = "part",
                  progress=None, digests: Optional[Dict[Any, Any]] = None) -> PendingPackage:
    """Starts making the part `gm` (an ATen graph module, its weights as attributes) an OpenVINO package:
    from the disk cache when there; else torch.onnx exports it here, and OpenVINO reads the ONNX model and
    writes the package in a Python process of its own, on a core of its own beside Inductor's compile in
    this one (on bert_base the export here and the conversion there take about as long). Where
    torch.onnx cannot export the part, the process converts its pickled module by OpenVINO's PyTorch
    frontend; where that process cannot start or fails, the conversion runs here when result() is
    called. `digests`: as inductor_parts._cache_key's."""
    why = openvino_missing()
    if why:
        raise Error(f"OpenVINO parts are not available: {why}")
    import openvino as ov
    configs = {"compiler": "openvino", "via": "onnx, unoptimized", "version": ov.__version__}
    content = part_digest(gm, examples, torch.device("cpu"), configs, digests)
    entry = part_cache.key("openvino-part", torch.device("cpu"), configs, content)
    cached = part_cache.read(entry, _SUFFIX)
    if cached is not None:
        return PendingPackage(package=cached)
    if progress:
        progress(f"compiling {label} with OpenVINO")
    path = part_cache.partial_path(entry, _SUFFIX)  # where the package is written, then committed
    folder = tempfile.TemporaryDirectory(prefix="autograph-openvino-")
    process = None
    try:
        # The process starts first: it imports OpenVINO while this one exports the part. One thread for
        # its own torch ops (the PyTorch frontend's): the other cores are Inductor's.
        env = dict(os.environ, OMP_NUM_THREADS="1")
        with open(os.path.join(folder.name, "stderr.txt"), "wb") as stderr:
            # A session of its own: closing it kills what it started too (OpenVINO's telemetry forks).
            process = subprocess.Popen(_converter_command(folder.name, path), env=env, cwd=folder.name,
                                       start_new_session=True,
                                       stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=stderr)
    except OSError as e:  # no interpreter to run: converted here
        logger.info("autograph: OpenVINO's converter process did not start (%s); converting here", e)
    try:
        try:
            _exporter_imported()
            model = _openvino_convert.onnx_of(gm, examples)
        except Exception as e:  # noqa: BLE001 - OpenVINO's PyTorch frontend may still convert the part
            logger.info("autograph: torch.onnx cannot export %s (%s); OpenVINO's PyTorch frontend converts it",
                        label, e)
            model = None
        return _hand_over(gm, examples, label, path, entry, model, process, folder)
    except BaseException:
        PendingPackage(path, process=process, folder=folder).close()
        raise


def _hand_over(gm: torch.fx.GraphModule, examples: Sequence[torch.Tensor], label: str, path: str, entry: str,
               model: Optional[bytes], process: Optional[subprocess.Popen],
               folder: tempfile.TemporaryDirectory) -> PendingPackage:
    """The part (and `model`, its ONNX model, where torch.onnx exported it) handed to the converter
    `process`, or converted here when result() is called where there is none or it fails; the package
    is written to `path` and becomes the cache's entry `entry`."""
    exported = model is not None
    if process is None:
        return PendingPackage(path, here=functools.partial(_convert_here, gm, examples, path, model, exported),
                              folder=folder, entry=entry)
    # Where the process fails, its model is not at hand any more: converted here from the start.
    here = functools.partial(_convert_here, gm, examples, path, None, exported)
    if not exported:
        try:  # the module pickled, code and weights (slow for a large model)
            torch.save(gm, os.path.join(folder.name, "part.pt"))
            torch.save(tuple(examples), os.path.join(folder.name, "examples.pt"))
        except Exception as e:  # noqa: BLE001 - a module that does not pickle: converted here
            logger.info("autograph: %s does not pickle (%s); converting it here", label, e)
            PendingPackage(path, process=process).close()
            return PendingPackage(path, here=here, folder=folder, entry=entry)
        _tell(process, _openvino_convert.PYTORCH)
        return PendingPackage(path, here=here, process=process, folder=folder, entry=entry)
    # The model goes through the pipe from a thread (a large model's bytes: the writes release the GIL), so
    # that this one goes on to Inductor's compile at once. Only the thread keeps the model.
    sender = threading.Thread(target=_tell, args=(process, _openvino_convert.onnx_header(len(model)), model),
                              name="autograph-openvino-sender", daemon=True)
    sender.start()
    return PendingPackage(path, here=here, process=process, folder=folder, sender=sender, entry=entry)


def _convert_here(gm: torch.fx.GraphModule, examples: Sequence[torch.Tensor], path: str, model: Optional[bytes],
                  exported: bool) -> None:
    """The package converted in this process: from `model` (the ONNX model) where it is at hand, else
    exported again where torch.onnx could (`exported`), else by OpenVINO's PyTorch frontend."""
    if model is not None:
        converted = _openvino_convert.from_onnx(model)
    elif exported:
        converted = _openvino_convert.convert(gm, examples)
    else:
        converted = _openvino_convert.from_pytorch(gm, examples)
    _openvino_convert.save_package(converted, path)


def _tell(process: subprocess.Popen, *chunks: bytes) -> None:
    """`chunks` on the converter's stdin, which is then closed (a process that died already hears
    nothing: PendingPackage.result() then converts here)."""
    if process.stdin is None or process.stdin.closed:
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


def _exporter_imported() -> None:
    """torch.onnx's exporter and what it imports at its first export, imported with Ctrl-C held back
    (interrupts_held)."""
    with interrupts_held():
        for module in ("onnx", "onnxscript", "onnx_ir", "torch.onnx._internal.exporter._core"):
            with contextlib.suppress(ImportError):
                importlib.import_module(module)


def compile_package(gm: torch.fx.GraphModule, examples: Sequence[torch.Tensor], label: str = "part",
                    progress=None) -> bytes:
    """The part `gm` as an OpenVINO package (start_package, waited for)."""
    return start_package(gm, examples, label, progress).result()


class OpenVinoCompiler:
    """OpenVINO's candidate (compilers/base.Compiler): "whole_openvino", the graph as one part, on CPU;
    each part converted in a process of its own (start), beside the other compilers' work."""
    name = "OpenVINO"
    option = "openvino"
    part_call = {"op": PART_OP, "fmt": FORMAT}
    lowers_by_parts = True  # a part lowered is the same package, its precision in its spec

    def missing(self) -> Optional[str]:
        return missing()

    def offers(self, builder: Any, graph: Dict[str, Any], body: Dict[str, Any], settings: Dict[str, Any],
               plan_unverified: bool) -> Dict[str, List[List[int]]]:
        return {"whole_openvino": whole_graph_part(body)} if builder.device.type == "cpu" else {}

    def lowered(self, device: torch.device, precision: str, candidate: str) -> List[str]:
        # The same IR compiled with bf16 inference precision: OpenVINO's CPU plugin runs bf16 where the CPU
        # has bf16 instructions and emulates it elsewhere (slower: the timing keeps it out).
        return ["bf16"] if device.type == "cpu" and precision == "bf16" else []

    def lower(self, builder: Any, name: str, parts: List[List[int]], labels: List[str],
              compiled: List[CompiledPart], precision: str) -> List[CompiledPart]:
        return compiled  # the same packages: the precision is in their specs

    def start(self, builder: Any, name: str, parts: List[List[int]],
              labels: List[str]) -> Callable[[], List[CompiledPart]]:
        started = [start(builder, p, label) for p, label in zip(parts, labels)]
        return lambda: [result() for result in started]


COMPILER = OpenVinoCompiler()


__all__ = ["COMPILER", "OpenVinoCompiler", "PART_OP", "FORMAT", "missing", "available", "start", "start_package", "compile_package", "PendingPackage"]
