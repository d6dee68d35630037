"""A quantizer's process started before its part is known (converter_process.Spare, quantized_part.warm):
it imports its libraries while the optimize makes the float32 package it will quantize, the first part
its quantizer quantizes takes it, and one nobody took is stopped before the contest times anything and
with the optimize. A stand-in converter (a script that reads its package's path from its stdin, as the
quantizers do where started early) stands for the quantizers in all but the last test."""
import os
import time
import types

import pytest
import torch

import autograph
from autograph.export import cache as part_cache
from autograph.export.calibration import INT8_CALIBRATION_INPUTS
from autograph.export.compilers import converter_process, quantized_part
from autograph.export.compilers.converter_process import Converter, Spare
from autograph.export.compilers.onnxruntime import int8_missing as onnxruntime_int8_missing
from autograph.export.compilers.openvino import int8_missing
from precision_models import Classifier

_STAND_IN = """import os, sys
folder, path = sys.argv[1], sys.argv[2]
open(os.path.join(folder, "imported"), "w").close()  # what a quantizer does before its part is known
if path == "-":
    path = sys.stdin.buffer.readline().decode().rstrip("\\n")
data = sys.stdin.buffer.read()
with open(path, "wb") as f:
    f.write(b"STANDIN" + data)
"""


@pytest.fixture
def stand_in(tmp_path, monkeypatch):
    monkeypatch.setenv("AUTOGRAPH_CACHE_DIR", str(tmp_path / "cache"))
    script = tmp_path / "stand_in.py"
    script.write_text(_STAND_IN)
    return Converter("stand-in", str(script), b"STANDIN", ".standin", 60, sized=False, early=True)


def _builder():
    """What quantized_part reads of a PartBuilder: its per-optimize states."""
    states = {}
    return types.SimpleNamespace(state=lambda owner, make: states.setdefault(owner, make()), states=states)


def _imported(pending, within_s=30.0):
    """Whether the process of `pending` got as far as its imports (its folder's mark) within `within_s`."""
    mark = os.path.join(pending._folder.name, "imported")
    ends = time.monotonic() + within_s
    while not os.path.exists(mark) and time.monotonic() < ends:
        time.sleep(0.05)
    return os.path.exists(mark)


def test_a_spare_process_starts_before_its_part_and_makes_the_first_part_handed_to_it(stand_in):
    spare = Spare(stand_in)
    process = spare._pending._process
    assert _imported(spare._pending)  # running before any part is known
    entry = part_cache.key("stand-in-part", torch.device("cpu"), {"x": 1}, "0" * 32)
    pending = spare.take(entry)
    assert pending is not None and pending._process is process and spare.take(entry) is None  # taken once
    pending.send(b"part")
    assert bytes(pending.result()) == b"STANDINpart"
    assert part_cache.read(entry, ".standin") is not None  # cached like any package
    assert process.poll() == 0


def test_a_spare_nobody_takes_is_stopped_before_timing_and_a_dead_one_is_replaced(stand_in):
    builder = _builder()
    quantized_part.warm(builder, stand_in)
    quantized_part.warm(builder, stand_in)  # one per quantizer
    spares = builder.states["quantizer spares"]
    (spare,) = spares.by_name.values()
    process, folder = spare._pending._process, spare._pending._folder.name
    spares.before_timing()
    assert process.wait(timeout=10) is not None and not os.path.exists(folder) and spares.by_name == {}
    # A spare whose process ended is not handed a part: a process of its own is started for it.
    quantized_part.warm(builder, stand_in)
    (spare,) = spares.by_name.values()
    dead = spare._pending._process
    converter_process.kill_group(dead)
    dead.wait()
    entry = part_cache.key("stand-in-part", torch.device("cpu"), {"x": 2}, "1" * 32)
    pending = quantized_part._process(builder, stand_in, entry)
    assert pending._process is not dead and spares.by_name == {}
    pending.send(b"again")
    assert bytes(pending.result()) == b"STANDINagain"


def test_a_converter_that_needs_its_path_at_start_cannot_be_a_spare(stand_in):
    stand_in.early = False
    with pytest.raises(ValueError, match="cannot start before its part is known"):
        Spare(stand_in)


@pytest.mark.skipif(int8_missing() is not None, reason=f"no int8 parts: {int8_missing()}")
def test_an_int8_optimize_hands_its_first_quantization_to_the_process_started_early(tmp_path, monkeypatch):
    monkeypatch.setenv("AUTOGRAPH_CACHE_DIR", str(tmp_path))  # nothing quantized before: each quantizer runs
    taken = []
    take = Spare.take

    def recorded(self, entry):
        name = self._pending._converter.name if self._pending is not None else None
        pending = take(self, entry)
        taken.append((name, pending is not None))
        return pending
    monkeypatch.setattr(Spare, "take", recorded)
    torch.manual_seed(0)
    model, x = Classifier().eval(), torch.randn(4, 32)
    calibration = [(torch.randn(4, 32),) for _ in range(INT8_CALIBRATION_INPUTS)]
    _, report = autograph.optimize(torch.export.export(model, (x,)), method="sequential", precision="int8",
                                   accuracy="top1", tolerance=0.0, calibration=calibration, inductor=False)
    assert ("NNCF", True) in taken, taken
    if onnxruntime_int8_missing() is None:
        assert ("ONNX Runtime quantizer", True) in taken, taken
    contest = report["inductor"]
    assert "whole_openvino_int8" in contest["candidates"], contest  # quantized by the spare, and within the bound
