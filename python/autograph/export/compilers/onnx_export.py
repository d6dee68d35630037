"""A part as an ONNX model, by torch.onnx's exporter in autograph's process: what OpenVINO's and ONNX
Runtime's converters read. One part is exported once per optimize (exported_part), however many compilers
read it."""
import warnings
from typing import Callable, Optional, Sequence, Tuple

import torch

from ..parts import PartBuilder
from .converter_process import exporter_imported


def onnx_of(part: torch.fx.GraphModule, examples: Sequence[torch.Tensor]) -> bytes:
    """The part (a graph module) as a serialized ONNX model, by torch.onnx's exporter; raises where it
    cannot export the part. Without the exporter's own optimizer: OpenVINO's frontend and ONNX Runtime's
    graph optimizations fold and fuse the same, and every zoo model ran as fast without it (outputs
    equal), while the export took less time."""
    exporter_imported()
    # The exporter's advice to call eval() first (an ATen graph has no modes), and a deprecation inside
    # torch that its copies of the module's tree specs meet (torch 2.11).
    with torch.no_grad(), warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Exporting a model while it is in training mode")
        warnings.filterwarnings("ignore", message=r"`isinstance\(treespec, LeafSpec\)` is deprecated",
                                category=FutureWarning)
        program = torch.onnx.export(part, tuple(examples), dynamo=True, external_data=False, verbose=False,
                                    optimize=False)
    return program.model_proto.SerializeToString()


class ExportedPart:
    """One part of an optimize as the compilers that read ONNX see it: its plain module (no compiler's
    rewrites), its input / output ids, examples of its inputs, and its ONNX model, exported on first
    use and kept (or the exporter's error, raised to every reader) until the optimize ends."""

    def __init__(self, builder: PartBuilder, part: Sequence[int], export: Callable[..., bytes]):
        self.module, self.input_ids, self.output_ids = builder.module_of(part)
        self.examples = builder.examples(self.input_ids)
        self._export = export
        self._onnx: Optional[bytes] = None
        self._error: Optional[BaseException] = None

    def onnx(self) -> bytes:
        if self._onnx is None and self._error is None:
            try:
                self._onnx = self._export(self.module, self.examples)
            except Exception as e:  # noqa: BLE001 - raised to each reader
                self._error = e
        if self._error is not None:
            raise self._error
        return self._onnx


def exported_part(builder: PartBuilder, part: Sequence[int],
                  export: Optional[Callable[..., bytes]] = None) -> ExportedPart:
    """`part` of the builder's graph as an ExportedPart, one per part and optimize (the builder keeps it),
    exported by `export` (default onnx_of) when first read."""
    made = builder.state("onnx_export", dict)
    key: Tuple[int, ...] = tuple(sorted(part))
    if key not in made:
        made[key] = ExportedPart(builder, part, export or onnx_of)
    return made[key]


__all__ = ["ExportedPart", "exported_part", "onnx_of"]
