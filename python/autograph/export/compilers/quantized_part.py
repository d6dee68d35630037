"""A part's float32 package quantized to INT8 by a quantizing process (OpenVINO's by NNCF,
openvino_quantize.py; ONNX Runtime's by its static quantization, onnxruntime_quantize.py): the part's
inputs at each calibration input sent to it (quantize_request.py), the package cached on disk like any
other, keyed by the float32 package, the inputs, the quantizer's configuration and the request's settings.
A quantizer's process may be started at the optimize's start (warm), so that it imports its libraries while
the float32 package is made; the first part it quantizes takes it, and the contest stops it before any
timing where nobody did (PartBuilder.before_timing)."""
import hashlib
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple, TypeVar

import torch

from ..._library import library_path
from ...errors import Error
from .. import cache as part_cache
from ..parts import CompiledPart, PartBuilder
from . import converter_process
from . import quantize_request
from .converter_process import Converter

T = TypeVar("T")


# How many quantizing processes run at once where several parts are quantized (a lowering by parts
# quantizes every part first): each spends seconds importing its libraries on one core before it computes.
AT_ONCE = 2


class _Spares:
    """The quantizers' processes started early for one optimize (converter_process.Spare), by quantizer
    name: each taken by the first part its quantizer quantizes, stopped before the contest times anything
    where nobody took it, and with the builder."""

    def __init__(self):
        self.by_name: Dict[str, converter_process.Spare] = {}

    def before_timing(self) -> None:
        self.close()

    def close(self) -> None:
        for spare in self.by_name.values():
            spare.close()
        self.by_name = {}


def warm(builder: PartBuilder, quantizer: Converter) -> None:
    """Starts `quantizer`'s process for the builder's first part it quantizes, before that part is known."""
    spares = builder.state("quantizer spares", _Spares)
    if quantizer.name not in spares.by_name:
        spares.by_name[quantizer.name] = converter_process.Spare(quantizer)


def _process(builder: PartBuilder, quantizer: Converter, entry: str) -> converter_process.PendingPackage:
    """`quantizer`'s process for the cache's entry `entry`: the builder's spare where one waits (warm), else
    one started now."""
    spare = builder.state("quantizer spares", _Spares).by_name.pop(quantizer.name, None)
    taken = spare.take(entry) if spare is not None else None
    return taken if taken is not None else converter_process.start_process(quantizer, entry)


def whole(builder: PartBuilder, part: Sequence[int]) -> bool:
    """Whether `part` is the builder's whole graph: its outputs are the program's."""
    return len(part) == len(builder.graph["nodes"])


def aim_of(builder: PartBuilder, made: CompiledPart,
           part: Sequence[int]) -> Tuple[Optional[Dict[str, Any]], List[List[torch.Tensor]]]:
    """What a quantizing process aims `part` (compiled as `made`) at: the builder's built-in measure and its
    bound, and the part's inputs at the example, judged there beside the calibration inputs; (None, [])
    where the builder has no aim or the part is not the whole graph (a part's own outputs are no
    program's: judged by the measure, they would say little)."""
    if not (builder.aim and whole(builder, part)):
        return None, []
    return {"measure": builder.aim[0], "bound": builder.aim[1]}, builder.inputs_at([builder.example], made.input_ids)


def start_quantized_package(quantizer: Converter, kind: str, builder: PartBuilder, made: CompiledPart, label: str,
                            configs: Dict[str, Any], settings: Dict[str, Any],
                            judged: Sequence[Sequence[torch.Tensor]] = ()) -> Callable[[], bytes]:
    """Starts quantizing `made`'s package by `quantizer` on the part's inputs at each calibration input
    (PartBuilder.calibration_examples), in its process; the returned call waits for the package. From the
    disk cache (entries of `kind`) when there. `settings` go to the process (with the path of autograph's
    library, which computes the built-in measures); `judged`: more of the part's input calls, judged there
    and not calibrated on."""
    calls = _arrays(builder.calibration_examples(made.input_ids))
    if not calls:
        raise Error("int8 parts are quantized on the calibration inputs, and there are none")
    shown = _arrays(judged)
    content = hashlib.sha256(part_cache.sha256_of(made.package).encode())
    for call in shown + calls:
        for a in call:
            content.update(f"{a.shape}{a.dtype}".encode())
            content.update(a.tobytes())
    entry = part_cache.key(kind, torch.device("cpu"), dict(configs, settings=settings), content.hexdigest()[:32])
    package = part_cache.read(entry, quantizer.suffix)
    if package is not None:
        return lambda: package
    builder.progress(f"quantizing {label} to int8 with {quantizer.name}")
    pending = _process(builder, quantizer, entry)
    builder.keep_until_close(pending)
    if pending._process is None:  # the quantizers run in a process of their own only
        pending.close()
        raise Error(f"{quantizer.name}'s process did not start; int8 parts are quantized in a process of their own only")
    pending.send(*quantize_request.request(made.package, calls, dict(settings, library=library_path()), shown))
    return pending.result


def in_turn(starts: Sequence[Callable[[], Callable[[], T]]], at_once: int = AT_ONCE) -> Callable[[], List[T]]:
    """Starts the first `at_once` of `starts` (a start returns the call that waits for what it makes); the
    returned call waits for them in order, starting the next as each ends (never more than `at_once`
    started and not waited for), and returns what each made. A start or wait that raises raises there,
    after the others started are waited for (their processes end, their packages cached)."""
    waiting: List[Callable[[], T]] = []
    left = list(starts)
    failed: List[BaseException] = []

    def start_next() -> None:
        if left and not failed:
            try:
                waiting.append(left.pop(0)())
            except Exception as e:  # noqa: BLE001 - raised once those already started are done
                failed.append(e)

    while left and len(waiting) < at_once and not failed:
        start_next()

    def wait() -> List[T]:
        made: List[T] = []
        while waiting:
            try:
                made.append(waiting.pop(0)())
            except Exception as e:  # noqa: BLE001 - the first failure is raised below
                failed.append(e)
            start_next()
        if failed:
            raise failed[0]
        return made
    return wait


def _arrays(calls: Sequence[Sequence[torch.Tensor]]) -> List[List[Any]]:
    return [[t.detach().cpu().contiguous().numpy() for t in call] for call in calls]


__all__ = ["AT_ONCE", "aim_of", "in_turn", "start_quantized_package", "warm", "whole"]
