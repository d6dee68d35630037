"""Rewrites of a torch.export ExportedProgram before autograph imports it: what the TorchScript path's
lowering and rewrites do on frozen graphs, done on the program's ATen graph.

`fold_weight_scalars` computes the numbers a program reads off its own weights (`self.shift.item()`)
once, as constants; `fold_batchnorm` folds eval-mode BatchNorm into the convolution (or linear) that feeds
it, with new weight tensors; `fuse_conv_relu_cudnn` makes conv2d (+ add) + relu one cuDNN fused operator on CUDA;
`lower_precision` makes the matmuls and convolutions compute below float32 (option precision).
Each returns a new ExportedProgram (the one passed is never changed: its graph, signature and tensors
stay as they were), or the same program when nothing applies.
"""
import dataclasses
import operator
from typing import Any, Dict, List, Optional, Set, Tuple, Union

import torch
from torch.export import ExportedProgram
from torch.export.graph_signature import (ExportGraphSignature, InputKind, InputSpec, OutputKind,
                                          TensorArgument)
from torch.fx.experimental.symbolic_shapes import free_symbols
from torch.nn.utils.fusion import fuse_conv_bn_weights, fuse_linear_bn_weights
from torch.utils import _pytree as pytree

from .lowered_graph import DTYPES, lower_operators

aten = torch.ops.aten

# Convolutions -> whether the weight is a transposed convolution's (None: the `transposed` argument says).
_CONVOLUTIONS = {
    aten.conv1d.default: False, aten.conv2d.default: False, aten.conv3d.default: False,
    aten.conv1d.padding: False, aten.conv2d.padding: False, aten.conv3d.padding: False,
    aten.conv_transpose1d.default: True, aten.conv_transpose2d.input: True, aten.conv_transpose3d.input: True,
    aten.convolution.default: None, aten._convolution.default: None,
}
# Batch norms that, with `training` false (where they take it), normalize by the running statistics ->
# whether the result is the first of several returns (read through getitem).
_BATCH_NORMS = {
    aten.batch_norm.default: False,
    aten._native_batch_norm_legit_no_training.default: True,
    aten.native_batch_norm.default: True,
}
_WEIGHT_KINDS = (InputKind.PARAMETER, InputKind.BUFFER, InputKind.CONSTANT_TENSOR)
# The dtypes cuDNN's fused convolution + bias + activation kernels take (the TorchScript path's rewrite
# leaves the others to the unfused operators).
_CUDNN_FUSED_DTYPES = (torch.float32, torch.float16)
_SYMBOLIC = (torch.SymInt, torch.SymFloat, torch.SymBool)


def _arguments(node: torch.fx.Node) -> Optional[Dict[str, Any]]:
    """The node's arguments by schema name, defaults filled in; None where one is missing."""
    found: Dict[str, Any] = {}
    for i, argument in enumerate(node.target._schema.arguments):
        if i < len(node.args):
            found[argument.name] = node.args[i]
        elif argument.name in node.kwargs:
            found[argument.name] = node.kwargs[argument.name]
        elif argument.has_default_value():
            found[argument.name] = argument.default_value
        else:
            return None
    return found


def _set_argument(node: torch.fx.Node, name: str, value: Any) -> None:
    """Sets the argument `name` of `node`, positional where it is passed by position or next in line."""
    index = [a.name for a in node.target._schema.arguments].index(name)
    args = list(node.args)
    if index < len(args):
        args[index] = value
        node.args = tuple(args)
    elif index == len(args) and name not in node.kwargs:
        node.args = tuple(args) + (value,)
    else:
        node.kwargs = {**node.kwargs, name: value}


class _Editable:
    """A copy of a program's graph, input specs and tensor tables that rewrites change; `finish` makes
    the new ExportedProgram. Weights are the placeholders of parameters, buffers and constant tensors
    that the program does not mutate."""

    def __init__(self, ep: ExportedProgram):
        self.ep = ep
        self.graph = torch.fx.Graph()
        copied: Dict[torch.fx.Node, torch.fx.Node] = {}
        self.graph.output(self.graph.graph_copy(ep.graph, copied))
        # The copy may rename a node whose name is a Python builtin ("input" -> "input_1"): the specs follow.
        self.renamed = {old.name: new.name for old, new in copied.items() if old.name != new.name}
        self.input_specs = [self._renamed(s) for s in ep.graph_signature.input_specs]
        self.state_dict = dict(ep.state_dict)
        self.constants = dict(ep.constants)
        mutated = {s.target for s in ep.graph_signature.output_specs if s.kind != OutputKind.USER_OUTPUT}
        self.placeholders = [n for n in self.graph.nodes if n.op == "placeholder"]
        self.weights: Dict[torch.fx.Node, torch.Tensor] = {}
        for node, spec in zip(self.placeholders, self.input_specs):
            if spec.kind in _WEIGHT_KINDS and spec.target not in mutated:
                table = self.state_dict if spec.target in self.state_dict else self.constants
                if isinstance(table.get(spec.target), torch.Tensor):
                    self.weights[node] = table[spec.target]
        self.released: Set[torch.fx.Node] = set()  # weights a rewrite stopped reading
        self.range_constraints = dict(ep.range_constraints)
        self._fake_mode = torch._guards.detect_fake_mode([n.meta.get("val") for n in self.placeholders])

    def _renamed(self, spec: InputSpec) -> InputSpec:
        if isinstance(spec.arg, TensorArgument) and spec.arg.name in self.renamed:
            return dataclasses.replace(spec, arg=dataclasses.replace(spec.arg, name=self.renamed[spec.arg.name]))
        return spec

    def target_of(self, node: torch.fx.Node) -> str:
        return self.input_specs[self.placeholders.index(node)].target

    def add_weight(self, tensor: torch.Tensor, target: str) -> torch.fx.Node:
        """A new buffer placeholder holding `tensor`, before the user's inputs; `target` made unique."""
        base, n = target, 0
        while target in self.state_dict or target in self.constants:
            n += 1
            target = f"{base}_{n}"
        first_input = next((p for p, s in zip(self.placeholders, self.input_specs) if s.kind == InputKind.USER_INPUT),
                           None)
        # Before the user's inputs (after the last weight where there are none), as export orders them.
        where = (self.graph.inserting_before(first_input) if first_input is not None
                 else self.graph.inserting_after(self.placeholders[-1]))
        with where:
            node = self.graph.placeholder("b_" + target.replace(".", "_"))
        node.target = node.name
        fake_mode = self._fake_mode or torch._subclasses.fake_tensor.FakeTensorMode()
        node.meta["val"] = fake_mode.from_tensor(tensor, static_shapes=True)
        at = self.placeholders.index(first_input) if first_input is not None else len(self.placeholders)
        self.placeholders.insert(at, node)
        self.input_specs.insert(at, InputSpec(InputKind.BUFFER, TensorArgument(node.name), target, persistent=True))
        self.state_dict[target] = tensor
        self.weights[node] = tensor
        return node

    def release(self, *nodes: Any) -> None:
        self.released.update(n for n in nodes if isinstance(n, torch.fx.Node) and n in self.weights)

    def finish(self) -> ExportedProgram:
        """The new program; weights a rewrite stopped reading and nothing else reads are dropped."""
        for node in [n for n in self.placeholders if n in self.released and not n.users]:
            at = self.placeholders.index(node)
            target = self.input_specs[at].target
            del self.placeholders[at], self.input_specs[at]
            self.graph.erase_node(node)
            if all(s.target != target for s in self.input_specs):
                self.state_dict.pop(target, None)
                self.constants.pop(target, None)
        self.graph.lint()
        # An output spec names the node returned in its place (a folded norm's output is its producer's now).
        (returned,) = [n.args[0] for n in self.graph.nodes if n.op == "output"]
        output_specs = [dataclasses.replace(s, arg=TensorArgument(r.name))
                        if isinstance(s.arg, TensorArgument) and isinstance(r, torch.fx.Node) else s
                        for s, r in zip(self.ep.graph_signature.output_specs, returned)]
        signature = ExportGraphSignature(self.input_specs, output_specs)
        ep = self.ep
        module = torch.fx.GraphModule(ep.graph_module, self.graph)
        return ExportedProgram(root=module, graph=module.graph, graph_signature=signature,
                               state_dict=self.state_dict, range_constraints=self.range_constraints,
                               module_call_graph=ep.module_call_graph, example_inputs=ep.example_inputs,
                               constants=self.constants, verifiers=ep.verifiers)


def fold_weight_scalars(ep: ExportedProgram) -> ExportedProgram:
    """`ep` with each number it computes from its own unmutated weights alone (a SymInt, SymFloat or SymBool:
    `round(self.shift.item() * 3)`, which torch.export leaves to run time as a data-dependent value) computed
    now, on those weights, and passed as a constant to the nodes that read it; the nodes only it needed go,
    and so do the range constraints of symbols no node holds any more. The optimized program holds its
    weights frozen (as BatchNorm folding and Inductor's freezing do), so the number is the one every call
    would compute. Numbers that depend on the user's inputs stay as they are. Returns `ep` itself when
    there is none."""
    if not any(isinstance(n.meta.get("val"), _SYMBOLIC) for n in ep.graph.nodes):
        return ep  # no number computed at all: no copy of the graph
    edit = _Editable(ep)
    from_weights: Set[torch.fx.Node] = set(edit.weights)
    scalars: List[torch.fx.Node] = []
    for node in edit.graph.nodes:
        read = _nodes_read(node)
        if node.op == "call_function" and read and all(r in from_weights for r in read):
            from_weights.add(node)
            if isinstance(node.meta.get("val"), _SYMBOLIC):
                scalars.append(node)
    if not scalars:
        return ep
    values: Dict[torch.fx.Node, Any] = dict(edit.weights)

    def value(node: torch.fx.Node) -> Any:
        if node not in values:
            args, kwargs = pytree.tree_map_only(torch.fx.Node, value, (node.args, node.kwargs))
            values[node] = node.target(*args, **kwargs)
        return values[node]
    with torch.no_grad():
        try:
            numbers = [value(node) for node in scalars]
        except Exception:  # noqa: BLE001 - left to run time: the import then says what it cannot plan
            return ep
        for node, number in zip(scalars, numbers):
            for user in list(node.users):
                user.args, user.kwargs = pytree.tree_map_only(
                    torch.fx.Node, lambda a, node=node, number=number: number if a is node else a,
                    (user.args, user.kwargs))
    for node in [n for n in edit.graph.nodes if n.target is aten._assert_scalar.default and n.args[0] is True]:
        edit.graph.erase_node(node)  # a check of a number from the weights that holds
    edit.graph.eliminate_dead_code()
    edit.release(*edit.weights)
    try:
        _propagate_shapes(edit)
    except Exception:  # noqa: BLE001 - the program as it was: the import says what it cannot plan
        return ep
    held: Set[Any] = set()
    for node in edit.graph.nodes:
        held.update(free_symbols(node.meta.get("val")))
    edit.range_constraints = {s: r for s, r in edit.range_constraints.items() if s in held}
    return edit.finish()


def _propagate_shapes(edit: _Editable) -> None:
    """Each node's meta["val"] computed again from the placeholders': a size that was a number from the
    weights (`x.narrow(-1, 0, self.k.item())`) is a plain size now."""
    from torch.fx.passes.fake_tensor_prop import FakeTensorProp
    fake_mode = edit._fake_mode or torch._subclasses.fake_tensor.FakeTensorMode()
    module = torch.fx.GraphModule(edit.ep.graph_module, edit.graph)
    FakeTensorProp(module, fake_mode).propagate_dont_convert_inputs(*[p.meta["val"] for p in edit.placeholders])


def _nodes_read(node: torch.fx.Node) -> List[torch.fx.Node]:
    return [a for a in pytree.tree_leaves((node.args, node.kwargs)) if isinstance(a, torch.fx.Node)]


def fold_batchnorm(ep: ExportedProgram) -> ExportedProgram:
    """`ep` with each eval-mode BatchNorm folded into the convolution (any dims and groups; transposed
    ones with one group) or linear (2-d output) that feeds it, where the convolution's output has no
    other reader and its weight and bias and the norm's statistics and affine parameters are the
    program's own unmutated weights. The folded weight and bias are new tensors (of the convolution's
    dtype and device) in new buffers, so a weight another node reads stays as it was; the norm and its
    getitem go. Returns `ep` itself when nothing folds."""
    edit = _Editable(ep)
    folded = 0
    for node in list(edit.graph.nodes):
        if node.op == "call_function" and node.target in _BATCH_NORMS:
            folded += _fold_into_producer(edit, node)
    return edit.finish() if folded else ep


def _norm_outputs(norm: torch.fx.Node) -> Optional[List[torch.fx.Node]]:
    """The nodes that stand for the norm's result: itself, or its getitem(0)s (None where another of its
    returns is read)."""
    if not _BATCH_NORMS[norm.target]:
        return [norm]
    users = list(norm.users)
    if any(u.op != "call_function" or u.target is not operator.getitem or u.args[1] != 0 for u in users):
        return None
    return users


def _fold_into_producer(edit: _Editable, norm: torch.fx.Node) -> bool:
    """Folds one norm into the convolution or linear that feeds it, where that is exact and safe."""
    bn = _arguments(norm)
    outputs = _norm_outputs(norm)
    if (bn is None or outputs is None or bn.get("training", False) is not False
            or not isinstance(bn["eps"], (int, float))):
        return False
    producer = bn["input"]
    if (not isinstance(producer, torch.fx.Node) or producer.op != "call_function" or len(producer.users) != 1
            or (producer.target not in _CONVOLUTIONS and producer.target is not aten.linear.default)):
        return False
    layer = _arguments(producer)
    if layer is None:
        return False
    tensors = {}
    for name, node, optional in [("weight", layer["weight"], False), ("bias", layer["bias"], True),
                                 ("mean", bn["running_mean"], False), ("var", bn["running_var"], False),
                                 ("scale", bn["weight"], True), ("shift", bn["bias"], True)]:
        if node is None and optional:
            tensors[name] = None
        elif isinstance(node, torch.fx.Node) and node in edit.weights:
            tensors[name] = edit.weights[node]
        else:
            return False
    fused = _folded_weights(producer, layer, tensors, float(bn["eps"]))
    if fused is None:
        return False
    weight_target = edit.target_of(layer["weight"])
    bias_target = (weight_target[:-len("weight")] + "bias" if weight_target.endswith("weight")
                   else weight_target + "_bias")
    new_weight = edit.add_weight(fused[0], weight_target + "_folded")
    new_bias = edit.add_weight(fused[1], bias_target + "_folded")
    edit.release(layer["weight"], layer["bias"], bn["running_mean"], bn["running_var"], bn["weight"], bn["bias"])
    _set_argument(producer, "weight", new_weight)
    _set_argument(producer, "bias", new_bias)
    for output in outputs:
        output.replace_all_uses_with(producer)
        edit.graph.erase_node(output)
    if outputs != [norm]:
        edit.graph.erase_node(norm)
    return True


def _folded_weights(producer: torch.fx.Node, layer: Dict[str, Any], t: Dict[str, Optional[torch.Tensor]],
                    eps: float) -> Optional[Tuple[torch.Tensor, torch.Tensor]]:
    """The folded (weight, bias) by torch's own fusion arithmetic, computed in at least float32 and
    returned in the layer's dtypes on its device; None where the fold would not be exact."""
    weight, bias = t["weight"], t["bias"]
    if not all(x is None or x.is_floating_point() for x in t.values()):
        return None  # an integer (quantized) weight would round the scale away
    channels = t["mean"].numel()
    if producer.target is aten.linear.default:
        # BatchNorm1d normalizes dim 1; a linear's features are its last dim: the same only on 2-d outputs.
        out = producer.meta.get("val")
        if weight.dim() != 2 or weight.shape[0] != channels or not isinstance(out, torch.Tensor) or out.dim() != 2:
            return None
    else:
        transposed = _CONVOLUTIONS[producer.target]
        transposed = bool(layer["transposed"]) if transposed is None else transposed
        # A transposed weight is (in, out / groups, ...): one scale per dim-1 index holds for one group only.
        if transposed and layer["groups"] != 1:
            return None
        if weight.shape[1 if transposed else 0] != channels:
            return None
    if any(x is not None and x.numel() != channels for x in (bias, t["var"], t["scale"], t["shift"])):
        return None

    def wide(x: Optional[torch.Tensor]) -> Optional[torch.Tensor]:
        if x is None:
            return None
        return x.detach().to(device=weight.device, dtype=torch.promote_types(x.dtype, torch.float32))

    mean, var, scale, shift = wide(t["mean"]), wide(t["var"]), wide(t["scale"]), wide(t["shift"])
    with torch.no_grad():
        if producer.target is aten.linear.default:
            scale = torch.ones_like(mean) if scale is None else scale
            shift = torch.zeros_like(mean) if shift is None else shift
            w, b = fuse_linear_bn_weights(wide(weight), wide(bias), mean, var, eps, scale, shift)
        else:
            w, b = fuse_conv_bn_weights(wide(weight), wide(bias), mean, var, eps, scale, shift,
                                        transpose=transposed)
    bias_dtype = bias.dtype if bias is not None else weight.dtype
    return w.detach().to(weight.dtype), b.detach().to(bias_dtype)


def lower_precision(ep: ExportedProgram, precision: str) -> ExportedProgram:
    """`ep` with its matmuls and convolutions computing in `precision` ("bf16", "fp16") as autocast computes
    them (lowered_graph.lower_operators): a weight that they alone read becomes a buffer of its own in that
    dtype (the float32 one dropped where nothing else reads it); the program's inputs, outputs and other
    operators keep their dtypes. For a plan on ATen's kernels: cuDNN and cuBLAS compute the lowered
    operators in that dtype, accumulating in float32. Returns `ep` itself where nothing is lowered."""
    edit = _Editable(ep)
    dtype = DTYPES[precision]

    def store(node: torch.fx.Node) -> Optional[torch.fx.Node]:
        if node not in edit.weights:
            return None
        made = edit.add_weight(edit.weights[node].detach().to(dtype), f"{edit.target_of(node)}_{precision}")
        edit.release(node)
        return made

    return edit.finish() if lower_operators(edit.graph, precision, store) else ep


def fuse_conv_relu_cudnn(ep: ExportedProgram, device: Union[str, torch.device]) -> ExportedProgram:
    """`rewrite_conv_relu_cudnn(ep)` when the program is to run on CUDA (`device`, which need not be where
    its tensors are now), else `ep`: cuDNN's fused operators have no kernel elsewhere. For a plan on
    ATen's kernels only: to Inductor they would be opaque fallbacks in place of what it fuses itself."""
    return rewrite_conv_relu_cudnn(ep) if torch.device(device).type == "cuda" else ep


def rewrite_conv_relu_cudnn(ep: ExportedProgram) -> ExportedProgram:
    """`ep` (functional ATen IR) with each 2-d convolution + relu as ``aten.cudnn_convolution_relu`` and
    each 2-d convolution + add + relu as ``aten.cudnn_convolution_add_relu`` (relu(conv(x, w) + alpha * z
    + bias)), on the conditions of the TorchScript path's rewrite: the weight one of the program's own,
    contiguous, float32 or float16 (the input and bias alike), the bias one of its own too or none, the
    added tensor of exactly the convolution output's shape and dtype (the fused add neither broadcasts
    nor promotes; alpha 1 where the convolution is the second operand), and the convolution's output and
    the sum read by nothing else. The rewrite does not look at devices: the result runs on CUDA only.
    Returns `ep` itself when nothing fuses."""
    edit = _Editable(ep)
    fused = 0
    for node in list(edit.graph.nodes):
        if node.op == "call_function" and node.target is aten.relu.default:
            fused += _fuse_into_relu(edit, node)
    return edit.finish() if fused else ep


def _cudnn_fusable(edit: _Editable, node: Any) -> Optional[Dict[str, Any]]:
    """The arguments of `node` where it is a convolution cuDNN's fused kernels take, read only once."""
    if (not isinstance(node, torch.fx.Node) or node.op != "call_function" or len(node.users) != 1
            or node.target not in (aten.conv2d.default, aten.convolution.default)):
        return None
    conv = _arguments(node)
    if conv is None or conv.get("transposed", False) is not False or conv["weight"] not in edit.weights:
        return None
    weight = edit.weights[conv["weight"]]
    x = conv["input"].meta.get("val") if isinstance(conv["input"], torch.fx.Node) else None
    if (weight.dim() != 4 or not weight.is_contiguous() or weight.dtype not in _CUDNN_FUSED_DTYPES
            or not isinstance(x, torch.Tensor) or x.dim() != 4 or x.dtype != weight.dtype):
        return None  # cuDNN's fused kernels take batched 4-d inputs only (conv2d also takes unbatched 3-d)
    bias = conv["bias"]
    if bias is not None:
        b = edit.weights.get(bias) if isinstance(bias, torch.fx.Node) else None
        if b is None or b.dim() != 1 or b.shape[0] != weight.shape[0] or b.dtype != weight.dtype:
            return None
    return conv


def _same_type(a: torch.fx.Node, b: torch.fx.Node) -> bool:
    """Whether two values have the same shape (sizes as written: symbolic ones alike) and dtype."""
    va, vb = a.meta.get("val"), b.meta.get("val")
    return (isinstance(va, torch.Tensor) and isinstance(vb, torch.Tensor) and va.dtype == vb.dtype
            and [str(d) for d in va.shape] == [str(d) for d in vb.shape])


def _fuse_into_relu(edit: _Editable, relu: torch.fx.Node) -> bool:
    """Makes `relu` and the convolution (and add) before it one fused node, where that holds."""
    source = relu.args[0]
    if not isinstance(source, torch.fx.Node) or len(source.users) != 1:
        return False
    conv_node, z, alpha = source, None, None
    if source.op == "call_function" and source.target is aten.add.Tensor:
        add = _arguments(source)
        if add is None or isinstance(add["alpha"], torch.fx.Node) or add["self"] is add["other"]:
            return False
        if _cudnn_fusable(edit, add["self"]) is not None:
            conv_node, z, alpha = add["self"], add["other"], add["alpha"]
        elif add["alpha"] == 1 and _cudnn_fusable(edit, add["other"]) is not None:
            conv_node, z, alpha = add["other"], add["self"], 1
        else:
            return False
        if not isinstance(z, torch.fx.Node) or not _same_type(z, conv_node):
            return False
    conv = _cudnn_fusable(edit, conv_node)
    if conv is None:
        return False
    geometry = (list(conv["stride"]), list(conv["padding"]), list(conv["dilation"]), conv["groups"])
    with edit.graph.inserting_before(relu):
        if z is None:
            fused = edit.graph.call_function(aten.cudnn_convolution_relu.default,
                                             (conv["input"], conv["weight"], conv["bias"], *geometry))
        else:
            fused = edit.graph.call_function(aten.cudnn_convolution_add_relu.default,
                                             (conv["input"], conv["weight"], z, alpha, conv["bias"], *geometry))
    fused.meta = dict(relu.meta)  # the relu's result: same shape, strides and dtype
    relu.replace_all_uses_with(fused)
    for node in (relu, source, conv_node) if source is not conv_node else (relu, conv_node):
        edit.graph.erase_node(node)
    return True
