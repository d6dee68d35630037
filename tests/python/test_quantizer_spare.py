"""A quantizer's process started before its part is known (converter_process.Spare, quantized_part.warm):
it imports its libraries while the optimize makes the float32 package it will quantize, the first part
its quantizer quantizes takes it, and one nobody took is stopped before the contest times anything and
with the optimize. A stand-in converter (a script that reads its package's path from its stdin, as the
quantizers do where started early) stands for the quantizers; test_precision_int8.py checks that an int8
optimize hands each quantizer's first part to the process started with it."""
import os
import time
import types

import pytest
import torch

from autograph.export import cache as part_cache
from autograph.export.compilers import converter_process, quantized_part
from autograph.export.compilers.converter_process import Converter, Spare

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

