"""Parts compiled by OpenVINO (export path, CPU): one more candidate compiler beside Inductor.

OpenVINO's CPU plugin runs some models well ahead of Inductor's C++ code (depthwise-separable and
NAS-style convolution networks: 2× on nasnet_a_mobile on the 2-core VM). A part — today the whole
graph — is exported to ONNX by torch.onnx in autograph's process and read by OpenVINO (its PyTorch
frontend where that export fails; see _openvino_convert.py) in a Python process of its own that runs
beside Inductor's compile of the other candidates (start_package), serialized as IR (XML and float32
weights, never compressed to float16) and packed into one uint8 tensor (_openvino_convert.save_package).
In the program it becomes one ``autograph::run_openvino_part`` call, which libautograph_openvino.so runs
with the latency hint and float32 inference precision. Like every candidate it is kept only where the
whole program measures faster. Packages are cached on disk beside Inductor's, keyed by the part's
graph, its weights and the OpenVINO and torch versions.
"""
import contextlib
import functools
import logging
import os
import subprocess
import sys
import tempfile
import threading
from typing import Any, Dict, Optional, Sequence

import torch

from . import _openvino_convert
from ._library import openvino_missing
from .errors import Error
from .inductor_parts import _cache_key, cache_dir

PART_OP = "autograph::run_openvino_part"
FORMAT = "autograph-openvino-part"
_log = logging.getLogger("autograph")


def available() -> bool:
    """Whether OpenVINO parts can be built and run in this process (openvino_missing() says why not)."""
    return openvino_missing() is None


class PendingPackage:
    """An OpenVINO package being made (start_package): `result()` waits for it and returns its bytes;
    `close()` stops what is still running. Whatever fails, result() raises it."""

    def __init__(self, path: str, here=None, process: Optional[subprocess.Popen] = None,
                 folder: Optional[tempfile.TemporaryDirectory] = None, sender: Optional[threading.Thread] = None):
        # `here` converts in this process: where no converter process runs, or where it failed. `sender`
        # writes the part to the process's stdin.
        self._path, self._here, self._process, self._folder, self._sender = path, here, process, folder, sender

    def result(self) -> bytes:
        try:
            self._finish()
        finally:
            self.close()
        with open(self._path, "rb") as f:
            return f.read()

    def _finish(self) -> None:
        if os.path.exists(self._path):  # from the cache (or made by a concurrent optimizer)
            return
        if self._process is not None:
            if self._process.wait() == 0 and os.path.exists(self._path):
                return
            # A model the converter's process cannot load (a custom op): this process may.
            with open(os.path.join(self._folder.name, "stderr.txt"), errors="replace") as f:
                said = f.read().strip().splitlines()[-1:]
            _log.info("autograph: OpenVINO's converter process failed (%s); converting here", said)
        self._here()

    def close(self) -> None:
        if self._process is not None:
            self._process.kill()  # first: a sender still writing then stops
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


def start_package(gm: torch.fx.GraphModule, examples: Sequence[torch.Tensor], label: str = "part",
                  progress=None, digests: Optional[Dict[Any, Any]] = None) -> PendingPackage:
    """Starts making the part `gm` (an ATen graph module, its weights as attributes) an OpenVINO package:
    from the disk cache when there; else torch.onnx exports it here, and OpenVINO reads the ONNX model and
    writes the package in a Python process of its own, on a core of its own beside Inductor's compile in
    this one. bert_base, 2-core VM: the export takes 2 s here (and 0.8 s to serialize), the conversion
    2-3 s there. Where torch.onnx cannot export the part, the process converts
    its pickled module by OpenVINO's PyTorch frontend; where that process cannot start or fails, the
    conversion runs here when result() is called. `digests`: as inductor_parts._cache_key's."""
    why = openvino_missing()
    if why:
        raise Error(f"OpenVINO parts are not available: {why}")
    import openvino as ov
    configs = {"compiler": "openvino", "via": "onnx, unoptimized", "version": ov.__version__}
    key = _cache_key(gm, examples, torch.device("cpu"), configs, digests)
    path = os.path.join(cache_dir(), key + ".ovpart")
    if os.path.exists(path):
        return PendingPackage(path)
    if progress:
        progress(f"compiling {label} with OpenVINO")
    os.makedirs(cache_dir(), exist_ok=True)
    folder = tempfile.TemporaryDirectory(prefix="autograph-openvino-")
    process = None
    try:
        # The process starts first: it imports OpenVINO while this one exports the part. One thread for
        # its own torch ops (the PyTorch frontend's): the other cores are Inductor's.
        env = dict(os.environ, OMP_NUM_THREADS="1")
        with open(os.path.join(folder.name, "stderr.txt"), "wb") as stderr:
            process = subprocess.Popen([sys.executable, _openvino_convert.__file__, folder.name, path], env=env,
                                       stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=stderr)
    except OSError as e:  # no interpreter to run: converted here
        _log.info("autograph: OpenVINO's converter process did not start (%s); converting here", e)
    try:
        try:
            model = _openvino_convert.onnx_of(gm, examples)
        except Exception as e:  # noqa: BLE001 - OpenVINO's PyTorch frontend may still convert the part
            _log.info("autograph: torch.onnx cannot export %s (%s); OpenVINO's PyTorch frontend converts it",
                      label, e)
            model = None
        return _hand_over(gm, examples, label, path, model, process, folder)
    except BaseException:
        PendingPackage(path, process=process, folder=folder).close()
        raise


def _hand_over(gm: torch.fx.GraphModule, examples: Sequence[torch.Tensor], label: str, path: str,
               model: Optional[bytes], process: Optional[subprocess.Popen],
               folder: tempfile.TemporaryDirectory) -> PendingPackage:
    """The part (and `model`, its ONNX model, where torch.onnx exported it) handed to the converter
    `process`, or converted here when result() is called where there is none or it fails."""
    exported = model is not None
    if process is None:
        return PendingPackage(path, here=functools.partial(_convert_here, gm, examples, path, model, exported),
                              folder=folder)
    # Where the process fails, its model is not at hand any more: converted here from the start.
    here = functools.partial(_convert_here, gm, examples, path, None, exported)
    if not exported:
        try:  # the module pickled, code and weights: 0.75 s for bert_base
            torch.save(gm, os.path.join(folder.name, "part.pt"))
            torch.save(tuple(examples), os.path.join(folder.name, "examples.pt"))
        except Exception as e:  # noqa: BLE001 - a module that does not pickle: converted here
            _log.info("autograph: %s does not pickle (%s); converting it here", label, e)
            PendingPackage(path, process=process).close()
            return PendingPackage(path, here=here, folder=folder)
        _tell(process, _openvino_convert.PYTORCH)
        return PendingPackage(path, here=here, process=process, folder=folder)
    # The model goes through the pipe from a thread (bert_base's 436 MB: the writes release the GIL), so
    # that this one goes on to Inductor's compile at once. Only the thread keeps the model.
    sender = threading.Thread(target=_tell, args=(process, _openvino_convert.onnx_header(len(model)), model),
                              name="autograph-openvino-sender", daemon=True)
    sender.start()
    return PendingPackage(path, here=here, process=process, folder=folder, sender=sender)


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


def compile_package(gm: torch.fx.GraphModule, examples: Sequence[torch.Tensor], label: str = "part",
                    progress=None) -> bytes:
    """The part `gm` as an OpenVINO package (start_package, waited for)."""
    return start_package(gm, examples, label, progress).result()


__all__ = ["PART_OP", "FORMAT", "available", "start_package", "compile_package", "PendingPackage"]
