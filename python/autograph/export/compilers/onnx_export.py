"""A part as an ONNX model, by torch.onnx's exporter in autograph's process: what OpenVINO's and ONNX
Runtime's converters read. One part is exported once per optimize (exported_part), however many compilers
read it."""
import json
import re
import warnings
from typing import Any, Callable, Dict, List, NamedTuple, Optional, Sequence, Tuple

import torch

from .. import cache as part_cache
from ..parts import PartBuilder, part_digest
from .converter_process import exporter_imported

_NAMES_SUFFIX = ".json"
# The metadata torch.onnx records on each ONNX node: the FX node it came from, as that graph prints it.
_FX_NODE_KEY = "pkg.torch.onnx.fx_node"
_FX_NODE = re.compile(r"%(\S+) : .*?call_function\[target=(?:torch\.ops\.)?([^\]]+)\]")


class OnnxModel(NamedTuple):
    """A part's serialized ONNX model and, for each of its nodes in order, its name, its outputs' names and
    the FX node torch.onnx recorded it came from (metadata "pkg.torch.onnx.fx_node"; "" where none): read
    from the exporter's own graph, so that naming kernels after graph nodes need not parse the model
    again (a large model's weights are inside it)."""
    model: bytes
    fx_nodes: Tuple[Tuple[str, Tuple[str, ...], str], ...]


def exported_onnx(part: torch.fx.GraphModule, examples: Sequence[torch.Tensor]) -> OnnxModel:
    """The part (a graph module) as an ONNX model, by torch.onnx's exporter; raises where it cannot export
    the part. Without the exporter's own optimizer: OpenVINO's frontend and ONNX Runtime's graph
    optimizations fold and fuse the same, and every zoo model ran as fast without it (outputs equal),
    while the export took less time."""
    exporter_imported()
    # The exporter's advice to call eval() first (an ATen graph has no modes), and a deprecation inside
    # torch that its copies of the module's tree specs meet (torch 2.11).
    with torch.no_grad(), warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Exporting a model while it is in training mode")
        warnings.filterwarnings("ignore", message=r"`isinstance\(treespec, LeafSpec\)` is deprecated",
                                category=FutureWarning)
        program = torch.onnx.export(part, tuple(examples), dynamo=True, external_data=False, verbose=False,
                                    optimize=False)
    fx_nodes = tuple((node.name or "", tuple(v.name or "" for v in node.outputs),
                      node.metadata_props.get(_FX_NODE_KEY, "")) for node in program.model.graph)
    return OnnxModel(program.model_proto.SerializeToString(), fx_nodes)


def onnx_of(part: torch.fx.GraphModule, examples: Sequence[torch.Tensor]) -> bytes:
    """The part's serialized ONNX model (exported_onnx)."""
    return exported_onnx(part, examples).model


class ExportedPart:
    """One part of an optimize as the compilers that read ONNX see it: its plain module (no compiler's
    rewrites), its input / output ids, examples of its inputs, and its ONNX model, exported on first
    use and kept (or the exporter's error, raised to every reader) until the optimize ends."""

    def __init__(self, builder: PartBuilder, part: Sequence[int], export: Callable[..., OnnxModel]):
        self.module, self.input_ids, self.output_ids = builder.module_of(part)
        self.examples = builder.examples(self.input_ids)
        self._export = export
        self._digests: Dict[Any, Any] = builder.weight_digests
        self._onnx: Optional[OnnxModel] = None
        self._error: Optional[BaseException] = None
        self._names: Optional[Dict[str, str]] = None

    def onnx(self) -> bytes:
        if self._onnx is None and self._error is None:
            try:
                self._onnx = self._export(self.module, self.examples)
            except Exception as e:  # noqa: BLE001 - raised to each reader
                self._error = e
        if self._error is not None:
            raise self._error
        return self._onnx.model

    def fx_names(self) -> Dict[str, str]:
        """The part's graph node each of its ONNX model's nodes and values came from (fx_names_of), kept in
        the disk cache beside the packages made from that model: where those come from the cache, no
        model is exported to read the names (bert_base's export takes longer than its profiles)."""
        if self._names is None:
            entry = part_cache.key("onnx-node-names", torch.device("cpu"), {"exporter": "torch.onnx"},
                                   part_digest(self.module, self.examples, torch.device("cpu"), {}, self._digests))
            cached = part_cache.read(entry, _NAMES_SUFFIX)
            if cached is not None:
                self._names = json.loads(cached.decode())
            else:
                self.onnx()
                self._names = fx_names_of(self._onnx.fx_nodes, self.module)
                with part_cache.writing(entry, _NAMES_SUFFIX) as partial:
                    with open(partial, "w") as f:
                        json.dump(self._names, f)
                part_cache.commit(partial, entry, _NAMES_SUFFIX)
        return self._names


def fx_names_of(fx_nodes: Sequence[Tuple[str, Sequence[str], str]], module: torch.fx.GraphModule) -> Dict[str, str]:
    """The name of `module`'s node (the module torch.onnx exported) each ONNX node and value came from, by
    the ONNX node's name and its outputs' names (`fx_nodes`: OnnxModel.fx_nodes). torch.onnx records on
    every ONNX node the FX node it came from, but of the module as it traced it again, whose nodes it named
    afresh: the k-th node calling an operator there is the k-th calling it in `module`."""
    ours: Dict[str, List[str]] = {}
    for node in module.graph.nodes:
        if node.op == "call_function":
            ours.setdefault(str(node.target), []).append(node.name)
    traced: Dict[str, str] = {}
    seen: Dict[str, int] = {}
    names: Dict[str, str] = {}
    for onnx_name, outputs, fx_node in fx_nodes:
        found = _FX_NODE.match(fx_node)
        if found is None:
            continue
        name, target = found.groups()
        if name not in traced:
            k = seen[target] = seen.get(target, -1) + 1
            mine = ours.get(target, [])
            traced[name] = mine[k] if k < len(mine) else ""
        if traced[name]:
            names.update({n: traced[name] for n in [onnx_name, *outputs] if n})
    return names


def exported_part(builder: PartBuilder, part: Sequence[int],
                  export: Optional[Callable[..., OnnxModel]] = None) -> ExportedPart:
    """`part` of the builder's graph as an ExportedPart, one per part and optimize (the builder keeps it),
    exported by `export` (default exported_onnx) when first read."""
    made = builder.state("onnx_export", dict)
    key: Tuple[int, ...] = tuple(sorted(part))
    if key not in made:
        made[key] = ExportedPart(builder, part, export or exported_onnx)
    return made[key]


__all__ = ["ExportedPart", "OnnxModel", "exported_onnx", "exported_part", "fx_names_of", "onnx_of"]
