"""The formats the export path writes and reads: an optimized program's text (a header line, then the
body, both JSON: csrc/executor/aten_program.h) and the names AtenGraph JSON gives dtypes, layouts and
memory formats (what c10's toString gives them, which the C++ side parses)."""
import json
from typing import Any, Dict

import torch

# torch dtype -> the name c10::toString(ScalarType) gives it.
DTYPE_NAMES = {
    torch.float32: "Float", torch.float64: "Double", torch.float16: "Half", torch.bfloat16: "BFloat16",
    torch.int64: "Long", torch.int32: "Int", torch.int16: "Short", torch.int8: "Char", torch.uint8: "Byte",
    torch.bool: "Bool", torch.complex64: "ComplexFloat", torch.complex128: "ComplexDouble",
    torch.uint16: "UInt16", torch.uint32: "UInt32", torch.uint64: "UInt64",
    torch.float8_e4m3fn: "Float8_e4m3fn", torch.float8_e5m2: "Float8_e5m2",
}
DTYPES_BY_NAME = {name: dtype for dtype, name in DTYPE_NAMES.items()}
LAYOUT_NAMES = {torch.strided: "Strided", torch.sparse_coo: "Sparse", torch._mkldnn: "Mkldnn"}
LAYOUTS_BY_NAME = {name: layout for layout, name in LAYOUT_NAMES.items()}
MEMORY_FORMAT_NAMES = {torch.contiguous_format: "Contiguous", torch.preserve_format: "Preserve",
                       torch.channels_last: "ChannelsLast", torch.channels_last_3d: "ChannelsLast3d"}
MEMORY_FORMATS_BY_NAME = {name: f for f, name in MEMORY_FORMAT_NAMES.items()}


def header_of(program: str) -> Dict[str, Any]:
    """A program text's header (format, digest, device, the outputs' metadata)."""
    return json.loads(program[:program.index("\n")])


def body_of(program: str) -> Dict[str, Any]:
    """A program text's body (the graph, its operators, the schedule, ...)."""
    return json.loads(program[program.index("\n") + 1:])


__all__ = ["DTYPE_NAMES", "DTYPES_BY_NAME", "LAYOUT_NAMES", "LAYOUTS_BY_NAME", "MEMORY_FORMAT_NAMES",
           "MEMORY_FORMATS_BY_NAME", "header_of", "body_of"]
