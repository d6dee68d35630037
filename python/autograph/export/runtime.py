"""What an optimized exported program runs with: ExecuteProgram (the module its graph is exported from:
one autograph::execute call on the weights and the user's tensors) and execute's fake kernel, which
export, torch.compile and AOTInductor trace with (the outputs the program's header lists, or for a
program with dynamic shapes its graph for other shapes run under the fake mode)."""
import collections
from typing import Any, Dict, List, Sequence, Tuple

import torch
from torch.utils import _pytree as pytree

from .._library import load_library
from ..errors import InputError
from .aten_import import PYTHON_SCALAR_OPS
from .program_format import DTYPES_BY_NAME, LAYOUTS_BY_NAME, MEMORY_FORMATS_BY_NAME, body_of, header_of


class ExecuteProgram(torch.nn.Module):
    """The optimized model: the original's weights as buffers (its small ones packed: packed_weights.py),
    forward = one autograph::execute call on them and the user's tensors, returned in the original's
    output structure."""

    def __init__(self, program: str, weights: Sequence[torch.Tensor], in_spec, out_spec,
                 extra_weights: Sequence[torch.Tensor] = ()):
        super().__init__()
        self.program = program
        self.num_weights = len(weights)
        self.num_extra_weights = len(extra_weights)
        for i, w in enumerate(weights):
            self.register_buffer(f"weight_{i}", w)
        for i, w in enumerate(extra_weights):  # read only by a dynamic program's graph for other shapes
            self.register_buffer(f"extra_weight_{i}", w)
        self._in_spec = in_spec
        self._out_spec = out_spec

    def forward(self, *args, **kwargs):
        flat, spec = pytree.tree_flatten((args, kwargs))
        if self._in_spec is not None and spec != self._in_spec:
            raise InputError(f"the optimized program takes inputs structured as {self._in_spec}, got {spec}")
        weights = [getattr(self, f"weight_{i}") for i in range(self.num_weights)]
        extra = [getattr(self, f"extra_weight_{i}") for i in range(self.num_extra_weights)]
        outputs = torch.ops.autograph.execute(weights + list(flat) + extra, self.program)
        return pytree.tree_unflatten(list(outputs), self._out_spec)


_FAKE_REGISTERED = False


def register_fake() -> None:
    """autograph::execute's fake kernel (for export, torch.compile and AOTInductor): the outputs the
    program's header lists, on its device."""
    global _FAKE_REGISTERED
    if _FAKE_REGISTERED:
        return
    load_library()

    @torch.library.register_fake("autograph::execute")
    def _execute_fake(inputs, program):
        header = header_of(program)
        device = torch.device(header["device"])
        if header.get("dynamic"):  # sizes follow the inputs': run the graph for other shapes on them
            graph, positions = _graph_for_other_shapes(header["digest"], program)
            values = graph["values"]
            # A weight that is not passed (a package runs other shapes) is made from its metadata.
            fed = [inputs[p] if p >= 0 else
                   torch.empty_strided(values[v]["shape"], values[v]["stride"],
                                       dtype=DTYPES_BY_NAME[values[v]["dtype"]], device=device)
                   for p, v in zip(positions, graph["inputs"])]
            outputs = _run_graph_fake(graph, fed)
            return [torch.empty_strided(o.shape, o.stride(), dtype=o.dtype, device=device) for o in outputs]
        return [torch.empty_strided(o["shape"], o["stride"], dtype=DTYPES_BY_NAME[o["dtype"]], device=device)
                for o in header["outputs"]]

    @torch.library.register_fake("autograph::packed_linear")
    def _packed_linear_fake(x, weight, bias=None):
        return torch.nn.functional.linear(x, weight, bias)

    _FAKE_REGISTERED = True


# The graphs for other shapes of the programs traced lately, by digest: parsed once, not per trace, and
# at most this many kept (a process may load many programs).
_GRAPHS_KEPT = 16
_GRAPHS_FOR_OTHER_SHAPES: "collections.OrderedDict[str, Tuple[Dict[str, Any], List[int]]]" = collections.OrderedDict()


def _graph_for_other_shapes(digest: str, program: str) -> Tuple[Dict[str, Any], List[int]]:
    if digest in _GRAPHS_FOR_OTHER_SHAPES:
        _GRAPHS_FOR_OTHER_SHAPES.move_to_end(digest)
    else:
        other = body_of(program)["other_shapes"]
        _GRAPHS_FOR_OTHER_SHAPES[digest] = (other["graph"], other["inputs"])
        while len(_GRAPHS_FOR_OTHER_SHAPES) > _GRAPHS_KEPT:
            _GRAPHS_FOR_OTHER_SHAPES.popitem(last=False)
    return _GRAPHS_FOR_OTHER_SHAPES[digest]


# A tagged constant of the importer's JSON (_constant) back to its Python value.
_CONSTANT_OF_TAG = {"float": float, "str": str, "ints": list, "bools": list, "device": torch.device,
                    "floats": lambda xs: [float(e) for e in xs], "dtype": DTYPES_BY_NAME.__getitem__,
                    "layout": LAYOUTS_BY_NAME.__getitem__, "memory_format": MEMORY_FORMATS_BY_NAME.__getitem__}


def _run_graph_fake(graph: Dict[str, Any], inputs: Sequence[Any]) -> List[Any]:
    """Runs an AtenGraph (as the importer wrote it) on `inputs` with PyTorch's own operators: under the
    fake mode export and AOTInductor trace with, the outputs' symbolic sizes."""
    values: List[Any] = [None] * len(graph["values"])
    for v, t in zip(graph["inputs"], inputs):
        values[v] = t

    def arg(a):
        if isinstance(a, dict):
            if "value" in a:
                return values[a["value"]]
            if "values" in a:
                return [None if e is None else e["int"] if isinstance(e, dict) else values[e] for e in a["values"]]
            (tag, x), = a.items()
            return _CONSTANT_OF_TAG[tag](x)
        return a

    for node in graph["nodes"]:
        args = [arg(a) for a in node["args"]]
        if node["op"] == "getitem":
            results = [args[0][args[1]]]
        elif node["op"] == "autograph::scalar_op":
            results = [PYTHON_SCALAR_OPS[args[0]](*args[1:])]
        elif not node["outputs"]:
            continue  # runtime assertions on sizes: nothing to trace
        else:
            namespace, name = node["op"].split("::")
            op = getattr(getattr(getattr(torch.ops, namespace), name), node["overload"])
            out = op(*args, **{k: arg(a) for k, a in node["kwargs"].items()})
            results = list(out) if len(node["outputs"]) > 1 else [out]
        for v, r in zip(node["outputs"], results):
            values[v] = r
    return [values[v] for v in graph["outputs"]]


__all__ = ["ExecuteProgram", "register_fake"]
