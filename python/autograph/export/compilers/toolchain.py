"""How autograph drives Inductor's C++ toolchain for the AOTInductor packages it compiles.

Two facts of the machine, not of the model, that Inductor leaves to its defaults:

- the C++ runtime is linked by its shared name, because a compiler that links it statically makes a
  package that crashes on load (bench/results/gpu-2026-11-26-h100);
- which vector instruction sets the compiler can build for and the CPU can run is checked once per
  machine, compiler and torch, not in every process (Inductor's own check is slow, and paid again in
  every process: bench/results/fresh-process-compile-2026-11-26-cpu).

And one fact of autograph: a compile that fails drops its candidate with the reason in the report, so the
traceback torch's fake tensors log before raising is not shown from autograph's compiles.
"""
import collections
import contextlib
import functools
import hashlib
import json
import logging
import os
import platform
import subprocess
import sys
import threading
from typing import Any, Callable, Dict, Iterator, Optional, Tuple

import torch

from ..cache import cache_dir

_SETTINGS = {"freezing": True}


@functools.lru_cache(maxsize=None)
def _shared_libstdcxx() -> Tuple[str, ...]:
    """Link the package against the C++ runtime's shared library by name. A compiler that links
    libstdc++ statically (its CUDA wrapper then has no NEEDED libstdc++.so.6 and locale symbols of its
    own: bench/results/gpu-2026-11-26-h100) makes a package whose std::locale copy meets the process's,
    and it crashed in std::regex while loading, with or without autograph. Where the compiler finds
    libstdc++.so.6 this names the file a sound toolchain links anyway."""
    if not sys.platform.startswith("linux"):
        return ()
    from torch._inductor.cpp_builder import get_cpp_compiler
    try:
        found = subprocess.run([get_cpp_compiler(), "-print-file-name=libstdc++.so.6"], capture_output=True,
                               text=True, timeout=30).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return ()
    return (":libstdc++.so.6",) if os.path.isabs(found) and os.path.exists(found) else ()


def aoti_configs(**settings: Any) -> Dict[str, Any]:
    """The Inductor settings of every AOTInductor package autograph compiles: weights frozen, the C++
    runtime linked shared, then ``settings``. (They are part of the packages' cache keys.)"""
    configs: Dict[str, Any] = dict(_SETTINGS)
    if _shared_libstdcxx():
        configs["aot_inductor.custom_op_libs"] = list(_shared_libstdcxx())
    configs.update(settings)
    return configs


def _read_answers(path: str) -> Dict[str, bool]:
    try:
        with open(path) as f:
            answers = json.load(f)
        return answers if isinstance(answers, dict) else {}
    except (OSError, ValueError):
        return {}


# The threads inside fake_tensor_errors_quiet now, how many times each.
_QUIET: "collections.Counter[int]" = collections.Counter()


class _InsideQuiet(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return _QUIET[record.thread] == 0


@contextlib.contextmanager
def fake_tensor_errors_quiet() -> Iterator[None]:
    """While this thread compiles for autograph: the errors torch's fake tensors log from this thread
    (a traceback for an operator whose meta kernel fails, e.g. `view_as_complex` of a tensor whose last
    dimension is not contiguous) are dropped. The compile raises after them, and its candidate is dropped
    with the reason in the report. Other threads' logs, and this one's after, are untouched."""
    logger = logging.getLogger("torch._subclasses.fake_tensor")
    if not any(isinstance(f, _InsideQuiet) for f in logger.filters):
        logger.addFilter(_InsideQuiet())
    thread = threading.get_ident()
    _QUIET[thread] += 1
    try:
        yield
    finally:
        _QUIET[thread] -= 1
        if not _QUIET[thread]:
            del _QUIET[thread]  # no entry kept per thread that ever compiled


# Who is inside vec_isa_checks_remembered now, and Inductor's own check while they are.
_REMEMBERING = {"users": 0, "original": None}
_REMEMBERING_LOCK = threading.Lock()


@contextlib.contextmanager
def vec_isa_checks_remembered() -> Iterator[None]:
    """While autograph compiles: Inductor checks each vector ISA the CPU reports by building a test
    program and loading it in a new Python process, in every process (it caches the build, not the
    load: https://github.com/pytorch/pytorch/issues/100378), which is slow
    (bench/results/fresh-process-compile-2026-11-26-cpu). An answer depends only on the CPU, the
    compiler, the ISA's flags and torch, so autograph keeps each one on disk (keyed by Inductor's own
    fingerprint of compiler, flags and torch, the test program and the CPU's capability) and asks
    Inductor only for answers it has not seen. Inductor's own check is back when the last body leaves (nested and
    concurrent bodies share one patch): the user's torch.compile is never patched by autograph. Where
    Inductor's check has another shape than this torch's, nothing is patched."""
    with _REMEMBERING_LOCK:
        if _REMEMBERING["users"] == 0:
            _REMEMBERING["original"] = _remember_vec_isa_checks()
        _REMEMBERING["users"] += 1
    try:
        yield
    finally:
        with _REMEMBERING_LOCK:
            _REMEMBERING["users"] -= 1
            if _REMEMBERING["users"] == 0 and _REMEMBERING["original"] is not None:
                from torch._inductor import cpu_vec_isa
                cpu_vec_isa.VecISA.check_build = _REMEMBERING["original"]
                _REMEMBERING["original"] = None


def _remember_vec_isa_checks() -> Optional[Callable[..., bool]]:
    """Installs the remembering check; returns Inductor's own (None where nothing was installed)."""
    from torch._inductor import cpu_vec_isa
    original = getattr(cpu_vec_isa.VecISA, "check_build", None)
    fingerprint = getattr(cpu_vec_isa, "_get_isa_dry_compile_fingerprint", None)
    if original is None or fingerprint is None or getattr(original, "autograph_remembers", False):
        return None
    path = os.path.join(cache_dir(), "vec-isa-checks.json")
    cpu = [torch.backends.cpu.get_cpu_capability(), platform.machine()]
    if platform.machine() in ("x86_64", "AMD64"):
        cpu.append(sorted(cpu_vec_isa.x86_isa_checker()))

    known = _read_answers(path)  # read once; a new answer is added to what is on disk by then

    def check_build(self: Any, code: str) -> bool:
        key = hashlib.sha256(json.dumps([fingerprint(self._arch_flags), code, cpu]).encode()).hexdigest()
        if isinstance(known.get(key), bool):
            return known[key]
        known[key] = ok = bool(original(self, code))
        partial = f"{path}.{os.getpid()}.partial"  # an interrupted write is swept like the cache's (cache.trim)
        try:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(partial, "w") as f:
                json.dump(dict(_read_answers(path), **{key: ok}), f)
            os.replace(partial, path)
        except OSError:  # a read-only cache: the answer holds for this process, Inductor asks again next time
            pass
        return ok

    check_build.autograph_remembers = True  # type: ignore[attr-defined]
    cpu_vec_isa.VecISA.check_build = check_build
    return original


def compile_package(ep: torch.export.ExportedProgram, path: str, configs: Dict[str, Any]) -> str:
    """AOTInductor's package of ``ep`` at ``path``, compiled with ``configs`` (from aoti_configs), the
    vector-ISA checks answered from disk where this machine has answered them before."""
    with vec_isa_checks_remembered():
        return torch._inductor.aoti_compile_and_package(ep, package_path=path, inductor_configs=configs)


def compile_graph_module(gm: torch.fx.GraphModule, examples: Tuple[torch.Tensor, ...], path: str,
                         configs: Dict[str, Any]) -> str:
    """AOTInductor's package of ``gm``, a graph already in functional ATen IR with its weights as
    attributes, called with ``examples``. AOTInductor traces what it compiles once more itself
    (aot_autograd), so this hands it the graph as it is: exporting it first, which
    aoti_compile_and_package requires, would trace it twice."""
    from torch._inductor.package import package_aoti
    with vec_isa_checks_remembered(), fake_tensor_errors_quiet():
        files = torch._inductor.aot_compile(gm, examples, options=dict(configs, **{"aot_inductor.package": True}))
    return package_aoti(path, files)
