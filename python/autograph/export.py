"""The export path: a torch.export ExportedProgram in, an optimized ExportedProgram out.

The program's ATen graph is read straight from its FX graph (shapes, strides and dtypes from the node
metadata torch.export recorded; no TorchScript, no extra run) into autograph's AtenGraph JSON; the C++
side plans it (search, on-board verification) and returns the program as text. The optimized
ExportedProgram's graph is one call of ``autograph::execute(Tensor[] inputs, str program)`` on the
original's weights and the user's inputs; it saves with ``torch.export.save`` and loads with
``torch.export.load`` once ``autograph`` is imported (which registers the op and its fake kernel).
"""
import dataclasses
import json
import logging
import math
import operator
import os
import statistics
import sys
import time
from typing import TYPE_CHECKING, Any, Callable, Dict, List, NamedTuple, Optional, Sequence, Tuple

import torch
from torch.export import ExportedProgram
from torch.export.graph_signature import ExportGraphSignature, InputKind, OutputKind, TensorArgument
from torch.utils import _pytree as pytree

from ._library import load_library
from .errors import InputError, UnsupportedModelError, translate

if TYPE_CHECKING:
    from .inductor_parts import PartBuilder

# torch dtype -> the name c10::toString(ScalarType) gives it.
_DTYPE_NAMES = {
    torch.float32: "Float", torch.float64: "Double", torch.float16: "Half", torch.bfloat16: "BFloat16",
    torch.int64: "Long", torch.int32: "Int", torch.int16: "Short", torch.int8: "Char", torch.uint8: "Byte",
    torch.bool: "Bool", torch.complex64: "ComplexFloat", torch.complex128: "ComplexDouble",
    torch.uint16: "UInt16", torch.uint32: "UInt32", torch.uint64: "UInt64",
    torch.float8_e4m3fn: "Float8_e4m3fn", torch.float8_e5m2: "Float8_e5m2",
}
_DTYPES_BY_NAME = {name: dtype for dtype, name in _DTYPE_NAMES.items()}
_LAYOUT_NAMES = {torch.strided: "Strided", torch.sparse_coo: "Sparse", torch._mkldnn: "Mkldnn"}
_MEMORY_FORMAT_NAMES = {torch.contiguous_format: "Contiguous", torch.preserve_format: "Preserve",
                        torch.channels_last: "ChannelsLast", torch.channels_last_3d: "ChannelsLast3d"}

_TORCHSCRIPT_HINT = ("; the TorchScript path may take it: autograph.optimize(model, inputs) on the nn.Module "
                     "(traced or scripted), or on a torch.jit module")

_log = logging.getLogger("autograph")

_WEIGHT_KINDS = (InputKind.PARAMETER, InputKind.BUFFER, InputKind.CONSTANT_TENSOR)


def aten_graph_of(ep: ExportedProgram) -> Tuple[Dict[str, Any], List[torch.Tensor]]:
    """The AtenGraph JSON of `ep` (run through its decompositions into the functional ATen IR, with no
    operator decomposed) and its weights in placeholder order (the user's inputs follow them)."""
    graph, weights, _ = _import(ep.run_decompositions({}))
    return graph, weights


class _Imported:
    """How the AtenGraph relates to the FX graph it came from: each FX node's value id (a tuple of ids
    for an operator with several returns) and each weight placeholder's tensor, by FX node name."""

    def __init__(self, value_of: Dict[str, Any], weights: Dict[str, torch.Tensor]):
        self.value_of = value_of
        self.weights = weights


# What FX calls on symbolic sizes (dynamic shapes) -> autograph::scalar_op's operation names.
_SCALAR_OPS = {
    operator.add: "add", operator.sub: "sub", operator.mul: "mul", operator.floordiv: "floordiv",
    operator.truediv: "truediv", operator.mod: "mod", operator.pow: "pow", operator.neg: "neg",
    operator.abs: "abs", operator.eq: "eq", operator.ne: "ne", operator.lt: "lt", operator.le: "le",
    operator.gt: "gt", operator.ge: "ge", operator.and_: "and", operator.or_: "or",
    torch.sym_max: "max", torch.sym_min: "min", torch.sym_float: "float", torch.sym_int: "int",
    torch.sym_not: "not", math.floor: "floor", math.ceil: "ceil",
}
_PYTHON_SCALAR_OPS = {
    "add": operator.add, "sub": operator.sub, "mul": operator.mul, "floordiv": operator.floordiv,
    "truediv": operator.truediv, "mod": operator.mod, "pow": operator.pow, "neg": operator.neg, "abs": operator.abs,
    "eq": operator.eq, "ne": operator.ne, "lt": operator.lt, "le": operator.le, "gt": operator.gt, "ge": operator.ge,
    "and": operator.and_, "or": operator.or_, "max": torch.sym_max, "min": torch.sym_min, "float": torch.sym_float,
    "int": torch.sym_int, "not": torch.sym_not, "floor": math.floor, "ceil": math.ceil,
}


def _user_inputs(ep: ExportedProgram) -> List[torch.fx.Node]:
    """The placeholders of `ep` that are the user's inputs (not weights), in order."""
    placeholders = [n for n in ep.graph.nodes if n.op == "placeholder"]
    return [n for n, spec in zip(placeholders, ep.graph_signature.input_specs) if spec.kind == InputKind.USER_INPUT]


def has_dynamic_shapes(ep: ExportedProgram) -> bool:
    """Whether any user input of `ep` has a symbolic size."""
    return any(isinstance(node.meta.get("val"), torch.Tensor) and any(not isinstance(d, int) for d in node.meta["val"].shape)
               for node in _user_inputs(ep))


def _hint(d, sizes: Optional[Dict[Any, int]] = None) -> int:
    """A size's value at the example inputs (the shape the plan is made for): from `sizes` (each symbol
    of the inputs' shapes -> its size in the inputs optimize was given), else the exported example's."""
    if isinstance(d, int):
        return d
    if sizes:
        import sympy
        value = d.node.expr.xreplace({s: sympy.Integer(v) for s, v in sizes.items()})
        if value.is_number:
            return int(value)
    hint = d.node.hint
    if hint is None:
        raise UnsupportedModelError(f"the exported program has a data-dependent size ({d}); the export path "
                                    "plans for sizes known from the inputs' shapes" + _TORCHSCRIPT_HINT)
    return int(hint)


def _import(ep: ExportedProgram, symbolic: bool = False,
            sizes: Optional[Dict[Any, int]] = None) -> Tuple[Dict[str, Any], List[torch.Tensor], _Imported]:
    """aten_graph_of on a program already in functional ATen IR, with the FX-to-AtenGraph mapping.
    `symbolic`: the program may have dynamic shapes; sizes computed on symbols become values
    (aten::sym_size, autograph::scalar_op) and shapes are recorded at the example's sizes (`sizes`)."""
    sig = ep.graph_signature
    bad_outputs = [s.kind.name for s in sig.output_specs if s.kind != OutputKind.USER_OUTPUT]
    if bad_outputs:
        raise UnsupportedModelError(f"the exported program mutates its buffers or inputs ({', '.join(bad_outputs)}); "
                                    "the export path takes programs without mutations" + _TORCHSCRIPT_HINT)
    values: List[Dict[str, Any]] = []
    value_of: Dict[torch.fx.Node, Any] = {}  # node -> value id, or a tuple of ids (multiple returns)

    def new_value(meta) -> int:
        values.append(_value_info(meta, symbolic, sizes))
        return len(values) - 1

    inputs, weights, weight_tensors = [], [], []
    placeholders = [n for n in ep.graph.nodes if n.op == "placeholder"]
    for node, spec in zip(placeholders, sig.input_specs):
        if spec.kind == InputKind.USER_INPUT:
            if not isinstance(node.meta.get("val"), torch.Tensor):
                raise UnsupportedModelError(f"input '{node.name}' is not a tensor ({type(node.meta.get('val')).__name__}); "
                                            "the export path takes tensor inputs" + _TORCHSCRIPT_HINT)
            weights.append(False)
        elif spec.kind in _WEIGHT_KINDS:
            weights.append(True)
            weight_tensors.append(_weight(ep, spec))
        else:
            raise UnsupportedModelError(f"input '{node.name}' is a {spec.kind.name}, which the export path cannot "
                                        "pass" + _TORCHSCRIPT_HINT)
        value_of[node] = new_value(node.meta.get("val"))
        inputs.append(value_of[node])
    if not any(not w for w in weights):
        raise UnsupportedModelError("the exported program takes no tensor input")

    nodes = []
    for node in ep.graph.nodes:
        if node.op in ("placeholder", "output"):
            continue
        if node.op != "call_function":
            raise UnsupportedModelError(f"node '{node.name}' ({node.op} {node.target}) is not an operator call; the "
                                        "export path takes flat ATen graphs" + _TORCHSCRIPT_HINT)
        if node.target is operator.getitem:
            source, index = node.args
            produced = value_of[source]
            if isinstance(produced, tuple):  # one of several returns: that value itself
                value_of[node] = produced[index]
            else:  # an element of a returned list
                value_of[node] = new_value(node.meta.get("val"))
                nodes.append({"op": "getitem", "overload": "default", "name": node.name,
                              "args": [{"value": produced}, index], "kwargs": {}, "outputs": [value_of[node]]})
            continue
        if symbolic and node.target in _SCALAR_OPS:
            args = [{"str": _SCALAR_OPS[node.target]}] + [_argument(a, value_of, node, None) for a in node.args]
            if node.kwargs or len(args) > 3:
                raise UnsupportedModelError(f"node '{node.name}' calls {node.target} with arguments autograph cannot pass")
            value_of[node] = new_value(node.meta.get("val"))
            nodes.append({"op": "autograph::scalar_op", "overload": "default", "name": node.name, "args": args,
                          "kwargs": {}, "outputs": [value_of[node]]})
            continue
        if not isinstance(node.target, torch._ops.OpOverload):
            raise UnsupportedModelError(f"node '{node.name}' calls {node.target}, which is not an ATen-style operator "
                                        "(control flow or a Python function?)" + _TORCHSCRIPT_HINT)
        schema = node.target._schema
        args = [_argument(a, value_of, node, schema.arguments[i] if i < len(schema.arguments) else None)
                for i, a in enumerate(node.args)]
        by_name = {a.name: a for a in schema.arguments}
        kwargs = {k: _argument(v, value_of, node, by_name.get(k)) for k, v in node.kwargs.items()}
        val = node.meta.get("val")
        if len(schema.returns) == 1:
            outputs = [new_value(val)]
            value_of[node] = outputs[0]
        else:
            metas = val if isinstance(val, (tuple, list)) else [None] * len(schema.returns)
            outputs = [new_value(m) for m in metas]
            value_of[node] = tuple(outputs)
        nodes.append({"op": schema.name, "overload": schema.overload_name or "default", "name": node.name,
                      "args": args, "kwargs": kwargs, "outputs": outputs})

    outputs = []
    (returned,) = [n.args[0] for n in ep.graph.nodes if n.op == "output"]
    for r in returned:
        if not isinstance(r, torch.fx.Node) or isinstance(value_of[r], tuple) or not values[value_of[r]]["tensor"]:
            raise UnsupportedModelError("the exported program returns something other than a tensor "
                                        f"({r!r}); the export path returns tensors" + _TORCHSCRIPT_HINT)
        outputs.append(value_of[r])
    graph = {"version": 1, "values": values, "inputs": inputs, "weights": weights, "nodes": nodes, "outputs": outputs}
    weight_of = {node.name: weight_tensors[sum(weights[:k])] for k, node in enumerate(placeholders) if weights[k]}
    return graph, weight_tensors, _Imported({n.name: v for n, v in value_of.items()}, weight_of)


def _returns_alias(target) -> bool:
    return any(r.alias_info is not None for r in target._schema.returns)


def _functional_twin(target):
    """aten::relu_ -> aten::relu (same overload, same arguments), or None."""
    schema = target._schema
    written = [i for i, a in enumerate(schema.arguments) if a.alias_info is not None and a.alias_info.is_write]
    if written != [0] or len(schema.returns) != 1 or not schema.name.endswith("_") or "::" not in schema.name:
        return None
    namespace, name = schema.name.split("::")
    packet = getattr(getattr(torch.ops, namespace, None), name[:-1], None)
    twin = getattr(packet, schema.overload_name or "default", None) if packet is not None else None
    if not isinstance(twin, torch._ops.OpOverload) or twin._schema.is_mutable or _returns_alias(twin):
        return None
    return twin if [a.name for a in twin._schema.arguments] == [a.name for a in schema.arguments] else None


def _functional(ep: ExportedProgram) -> Optional[ExportedProgram]:
    """`ep` in functional ATen IR, as run_decompositions({}) gives it, without tracing it again (that
    costs 0.5 s on a small model, 4 s on NASNet) where it is a renaming: every node an operator; an
    in-place one (relu_, add_ on a residual) writes only its first argument, a value a node of the graph
    made fresh (not a view, not an input) and that no view reads; it becomes its functional twin (relu,
    add), and what read that value after it reads its result. None where anything else is found (a
    higher-order op, a write to an input or a view, no twin, a mutation the signature lists): then
    run_decompositions. The weights are shared with `ep`, the graph is a copy."""
    if any(s.kind != OutputKind.USER_OUTPUT for s in ep.graph_signature.output_specs):
        return None
    graph = torch.fx.Graph()
    copied: Dict[torch.fx.Node, torch.fx.Node] = {}
    graph.output(graph.graph_copy(ep.graph, copied))  # meta (shapes, strides) comes with each node
    order = {n: i for i, n in enumerate(graph.nodes)}
    for node in list(graph.nodes):
        if node.op in ("placeholder", "output") or node.target is operator.getitem:
            continue
        if node.op != "call_function" or not isinstance(node.target, torch._ops.OpOverload):
            return None
        if not node.target._schema.is_mutable:
            continue
        twin = _functional_twin(node.target)
        written = node.args[0] if node.args else None
        if twin is None or not isinstance(written, torch.fx.Node) or written.op != "call_function":
            return None
        source = written.args[0] if written.target is operator.getitem else written
        if not isinstance(source.target, torch._ops.OpOverload) or _returns_alias(source.target):
            return None
        later = []
        for user in written.users:
            if user is node:
                continue
            if user.op == "output":
                return None
            if user.op == "call_function" and isinstance(user.target, torch._ops.OpOverload) and _returns_alias(user.target):
                return None
            if order[user] > order[node]:
                later.append(user)
        node.target = twin
        for user in later:
            user.replace_input_with(written, node)
    # The copy may rename a node whose name is a Python builtin ("input" -> "input_1"): the signature follows.
    renamed = {old.name: new.name for old, new in copied.items() if old.name != new.name}

    def spec(s):
        arg = s.arg
        if isinstance(arg, TensorArgument) and arg.name in renamed:
            arg = dataclasses.replace(arg, name=renamed[arg.name])
        return dataclasses.replace(s, arg=arg)

    signature = ExportGraphSignature([spec(s) for s in ep.graph_signature.input_specs],
                                     [spec(s) for s in ep.graph_signature.output_specs])
    module = torch.fx.GraphModule(ep.graph_module, graph)
    return ExportedProgram(root=module, graph=module.graph, graph_signature=signature,
                           state_dict=ep.state_dict, range_constraints=ep.range_constraints,
                           module_call_graph=ep.module_call_graph, example_inputs=ep.example_inputs,
                           constants=ep.constants, verifiers=ep.verifiers)


def _weight(ep: ExportedProgram, spec) -> torch.Tensor:
    if spec.target in ep.state_dict:
        t = ep.state_dict[spec.target]
    elif spec.target in ep.constants:
        t = ep.constants[spec.target]
    else:
        raise UnsupportedModelError(f"the exported program has no tensor for its {spec.kind.name} '{spec.target}'")
    if not isinstance(t, torch.Tensor):
        raise UnsupportedModelError(f"the exported program's constant '{spec.target}' is a {type(t).__name__}, "
                                    "not a tensor" + _TORCHSCRIPT_HINT)
    return t.detach()


def _value_info(meta, symbolic: bool = False, sizes: Optional[Dict[Any, int]] = None) -> Dict[str, Any]:
    if isinstance(meta, torch.Tensor):
        if not symbolic and (any(not isinstance(d, int) for d in meta.shape)
                             or any(not isinstance(s, int) for s in meta.stride())):
            raise UnsupportedModelError("the exported program has dynamic shapes (internal: imported as static)")
        if meta.dtype not in _DTYPE_NAMES:
            raise UnsupportedModelError(f"dtype {meta.dtype} is not supported by the export path")
        return {"tensor": True, "shape": [_hint(d, sizes) for d in meta.shape],
                "stride": [_hint(d, sizes) for d in meta.stride()],
                "dtype": _DTYPE_NAMES[meta.dtype]}
    if not symbolic and isinstance(meta, (torch.SymInt, torch.SymFloat, torch.SymBool)):
        raise UnsupportedModelError("the exported program computes symbolic sizes (internal: imported as static)")
    return {"tensor": False}


def _is_tensor_list_type(argument) -> bool:
    if argument is None:
        return False
    t = argument.type
    if isinstance(t, torch._C.OptionalType):
        t = t.getElementType()
    if not isinstance(t, torch._C.ListType):
        return False
    element = t.getElementType()
    if isinstance(element, torch._C.OptionalType):
        element = element.getElementType()
    return isinstance(element, torch._C.TensorType)


def _argument(a, value_of, node, argument):
    """One argument as AtenGraph JSON: a value, a list of values, or a tagged constant."""
    if isinstance(a, torch.fx.Node):
        v = value_of[a]
        if isinstance(v, tuple):
            raise UnsupportedModelError(f"node '{node.name}' passes all returns of '{a.name}' as one argument")
        return {"value": v}
    if isinstance(a, (list, tuple)) and (_is_tensor_list_type(argument) or any(isinstance(e, torch.fx.Node) for e in a)):
        ids = []
        for e in a:
            if e is None:
                ids.append(None)
            elif isinstance(e, torch.fx.Node) and isinstance(value_of[e], int):
                ids.append(value_of[e])
            elif isinstance(e, int) and not isinstance(e, bool) and not _is_tensor_list_type(argument):
                ids.append({"int": e})  # a constant size beside computed ones: [s0, 768]
            else:
                raise UnsupportedModelError(f"node '{node.name}' passes {e!r} inside a list of values, which the "
                                            "export path cannot carry" + _TORCHSCRIPT_HINT)
        return {"values": ids}
    return _constant(a, node)


def _constant(a, node):
    if a is None or isinstance(a, (bool, int)):
        return a
    if isinstance(a, float):
        return {"float": repr(a)}
    if isinstance(a, str):
        return {"str": a}
    if isinstance(a, torch.dtype):
        if a not in _DTYPE_NAMES:
            raise UnsupportedModelError(f"node '{node.name}' uses dtype {a}, which the export path does not carry")
        return {"dtype": _DTYPE_NAMES[a]}
    if isinstance(a, torch.device):
        return {"device": str(a)}
    if isinstance(a, torch.layout) and a in _LAYOUT_NAMES:
        return {"layout": _LAYOUT_NAMES[a]}
    if isinstance(a, torch.memory_format) and a in _MEMORY_FORMAT_NAMES:
        return {"memory_format": _MEMORY_FORMAT_NAMES[a]}
    if isinstance(a, (list, tuple)):
        if all(isinstance(e, bool) for e in a) and a:
            return {"bools": list(a)}
        if all(isinstance(e, int) and not isinstance(e, bool) for e in a):
            return {"ints": list(a)}
        if all(isinstance(e, (int, float)) and not isinstance(e, bool) for e in a):
            return {"floats": [repr(float(e)) for e in a]}
    if isinstance(a, (torch.SymInt, torch.SymFloat, torch.SymBool)):
        raise UnsupportedModelError(f"node '{node.name}' takes a symbolic size that is not computed by a node of "
                                    "the graph" + _TORCHSCRIPT_HINT)
    raise UnsupportedModelError(f"node '{node.name}' ({node.target}) takes a constant {a!r} of type "
                                f"{type(a).__name__}, which the export path cannot carry" + _TORCHSCRIPT_HINT)


class ExecuteProgram(torch.nn.Module):
    """The optimized model: the original's weights as buffers, forward = one autograph::execute call on
    them and the user's tensors, returned in the original's output structure."""

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


def optimize_exported(ep: ExportedProgram, *, method: str, device: Optional[str], options: Dict[str, Any],
                      example_inputs: Optional[Sequence[Any]] = None,
                      example_kwargs: Optional[Dict[str, Any]] = None) -> Tuple[ExportedProgram, Dict[str, Any]]:
    """Plans `ep` and returns the optimized ExportedProgram and the report (the keys of optimize --json)."""
    load_library()
    register_fake()
    if example_inputs is None:
        example_inputs, example_kwargs = ep.example_inputs or ((), {})
        if not ep.example_inputs:
            raise InputError("the exported program carries no example inputs; pass them: "
                             "autograph.optimize(ep, example_inputs)")
    example_kwargs = dict(example_kwargs or {})
    flat, in_spec = pytree.tree_flatten((tuple(example_inputs), example_kwargs))
    tensors = [t for t in flat if isinstance(t, torch.Tensor)]
    if len(tensors) != len(flat):
        raise UnsupportedModelError("the export path takes tensor inputs only" + _TORCHSCRIPT_HINT)
    # The optimized program holds the weights as its own buffers (frozen), so BatchNorm folds into the
    # convolutions first; from here on every use of `ep` (the plan, each compiled candidate, the graph
    # and plans for other shapes) reads the folded program. The caller's program stays as it was.
    from .export_rewrites import fold_batchnorm
    ep = fold_batchnorm(ep)
    dynamic = has_dynamic_shapes(ep)
    options = dict(options)
    shapes = _shapes_of(options.pop("shapes", None), tensors)
    if shapes and not dynamic:
        raise InputError("shapes: this exported program has static shapes and runs at those alone; export it with "
                         "dynamic_shapes (torch.export.Dim) whose ranges hold the shapes to plan for")
    # A program with dynamic shapes is planned at the example's shapes (exported again with them) and
    # keeps its own graph, sizes computed, for the other shapes.
    planned = _specialized(ep, example_inputs, example_kwargs) if dynamic else ep
    decomposed = _functional(planned) or planned.run_decompositions({})
    graph, weights, imported = _import(decomposed)
    target = torch.device(device) if device is not None else (tensors[0].device if tensors else torch.device("cpu"))
    moved: Dict[Any, torch.Tensor] = {}
    weights = [_to_device(w, target, moved) for w in weights]
    tensors = [t.to(target) for t in tensors]
    settings = dict(options, method=method, device=str(target))
    fused = _fused_for_cudnn(decomposed, target, moved) if _measures_rewrites(settings) else None
    program, weights, report, measure, compile_parts = _plan_and_compile(decomposed, graph, imported, weights,
                                                                         tensors, settings, fused)
    extra: List[torch.Tensor] = []
    if dynamic:
        structured = pytree.tree_unflatten(tensors, in_spec)
        probe_shapes = shapes or _larger_shape(ep, tensors)
        probes = [pytree.tree_unflatten([_resized(t, s) for t, s in zip(tensors, shape)], in_spec)
                  for shape in probe_shapes]
        program, extra, other = _with_graph_for_other_shapes(ep, program, weights, tensors, structured, target, moved,
                                                             compile_parts=compile_parts, measure=measure, probes=probes)
        report["dynamic_shapes"] = dict(planned_for=[list(t.shape) for t in tensors], **other)
    if shapes:
        program, report["shape_plans"] = _with_plans_for_shapes(ep, program, weights, tensors, extra, in_spec, shapes,
                                                                target, moved, settings)
    module = ExecuteProgram(program, weights, in_spec, ep.call_spec.out_spec, extra)
    placed = tuple(t.to(target) if isinstance(t, torch.Tensor) else t for t in example_inputs)
    placed_kwargs = {k: (v.to(target) if isinstance(v, torch.Tensor) else v) for k, v in example_kwargs.items()}
    shapes = _dynamic_shapes_of(ep, module, placed, placed_kwargs) if dynamic else None
    try:
        optimized = torch.export.export(module, placed, placed_kwargs, dynamic_shapes=shapes, strict=False)
    except Exception as e:  # noqa: BLE001 - what export says is the message
        raise UnsupportedModelError(f"exporting the optimized program failed: {str(e).splitlines()[0]}") from e
    return optimized, report


def _to_device(t: torch.Tensor, target: torch.device, moved: Dict[Any, torch.Tensor]) -> torch.Tensor:
    """t on `target`, one copy per tensor (the plan's and the dynamic graph's weights share storage)."""
    key = _storage_key(t)
    if key not in moved:
        moved[key] = t.to(target)
    return moved[key]


def _specialized(ep: ExportedProgram, example_inputs, example_kwargs) -> ExportedProgram:
    """`ep` exported again at the example inputs' shapes: what the plan is made for."""
    try:
        return torch.export.export(ep.module(), tuple(example_inputs), dict(example_kwargs or {}), strict=False)
    except Exception as e:  # noqa: BLE001 - what export says is the message
        raise UnsupportedModelError(f"the program with dynamic shapes could not be exported at the example's shapes "
                                    f"to plan it: {str(e).splitlines()[0]}") from e


def _shapes_of(text: Optional[str], tensors: List[torch.Tensor]) -> List[List[Tuple[int, ...]]]:
    """The `shapes` option's text ("1x16,1x16;8x512,8x512": shapes separated by ';', a shape's tensors
    by ',') as one list of tensor sizes per shape, checked against the example's tensors."""
    if not text:
        return []
    shapes = []
    for shape in text.split(";"):
        sizes = [tuple(int(n) for n in tensor.split("x")) for tensor in shape.split(",")]
        if len(sizes) != len(tensors):
            raise InputError(f"shapes: \"{shape}\" gives {len(sizes)} tensor shapes, the example inputs hold "
                             f"{len(tensors)} tensors (separate a shape's tensors with ',', shapes with ';')")
        for k, (s, t) in enumerate(zip(sizes, tensors)):
            if len(s) != t.dim():
                raise InputError(f"shapes: tensor {k} of \"{shape}\" has rank {len(s)}, the example's has rank "
                                 f"{t.dim()}: shapes may change sizes, not ranks")
        shapes.append(sizes)
    return shapes


def _resized(t: torch.Tensor, sizes: Sequence[int]) -> torch.Tensor:
    """`t` tiled or cut to `sizes` (the example's values repeated: token ids stay valid ids)."""
    r = t
    for d, want in enumerate(sizes):
        have = r.shape[d]
        if want == have:
            continue
        if have == 0:
            r = torch.zeros(*r.shape[:d], want, *r.shape[d + 1:], dtype=r.dtype, device=r.device)
            continue
        if want > have:
            repeats = [1] * r.dim()
            repeats[d] = -(-want // have)
            r = r.repeat(repeats)
        r = r.narrow(d, 0, want)
    return r.contiguous()


def _larger_shape(ep: ExportedProgram, tensors: List[torch.Tensor], factor: int = 4) -> List[List[Tuple[int, ...]]]:
    """One more shape to judge the package for every shape at when the user listed none: each dynamic
    dim `factor` times the example's, within its range (a package that wins at the example can lose at
    larger sizes); [] when that is the example's shape or a size is not a plain symbol's."""
    import sympy
    larger = {}
    for symbol, value in _symbol_sizes(ep, tensors).items():
        upper = _upper_bound(ep, symbol)
        larger[symbol] = value * factor if upper is None else min(upper, value * factor)
    shape = []
    for node, tensor in zip(_user_inputs(ep), tensors):
        dims = []
        for d, n in zip(node.meta["val"].shape, tensor.shape):
            if isinstance(d, int):
                dims.append(int(n))
            elif isinstance(d.node.expr, sympy.Symbol) and d.node.expr in larger:
                dims.append(larger[d.node.expr])
            else:
                return []
        shape.append(tuple(dims))
    return [] if all(s == tuple(t.shape) for s, t in zip(shape, tensors)) else [shape]


def _with_plans_for_shapes(ep: ExportedProgram, program: str, weights: List[torch.Tensor],
                           tensors: List[torch.Tensor], extra: List[torch.Tensor], in_spec, shapes,
                           target: torch.device, moved: Dict[Any, torch.Tensor],
                           settings: Dict[str, Any]) -> Tuple[str, List[Dict[str, Any]]]:
    """The program with a plan of its own for each of `shapes` (`ep` exported again at that shape, planned
    and compiled as the example's shape is), which inputs of exactly that shape run; the weights those
    plans read that the program does not pass yet are appended to `extra`. Returns the program and the
    report's lines, one per shape."""
    num_inputs = len(tensors)
    user_positions = [len(weights) + i for i in range(num_inputs)]
    module = ep.module()
    lines: List[Dict[str, Any]] = []
    for shape in shapes:
        line: Dict[str, Any] = {"shapes": [list(s) for s in shape]}
        lines.append(line)
        if all(tuple(s) == tuple(t.shape) for s, t in zip(shape, tensors)):
            line["skipped"] = "the example's shapes: the program's own plan"
            continue
        start = time.perf_counter()
        _progress(f"planning for shapes {'x'.join(map(str, shape[0]))}{', ...' if len(shape) > 1 else ''}")
        resized = [_resized(t, s) for t, s in zip(tensors, shape)]
        args, kwargs = pytree.tree_unflatten(resized, in_spec)
        try:
            specialized = torch.export.export(module, tuple(args), dict(kwargs), strict=False)
        except Exception as e:  # noqa: BLE001 - out of the exported range, most often: export says which dim
            raise InputError(f"shapes: the program cannot be exported at {line['shapes']}: "
                             f"{str(e).splitlines()[0]} (shapes must lie in the ranges of its dynamic dims)") from None
        decomposed = _functional(specialized) or specialized.run_decompositions({})
        graph, plan_weights, imported = _import(decomposed)
        plan_weights = [_to_device(w, target, moved) for w in plan_weights]
        plan, plan_weights, report, _, _ = _plan_and_compile(decomposed, graph, imported, plan_weights, resized,
                                                             settings)
        positions = _passed_positions(plan_weights, weights, num_inputs, extra)
        try:
            program = torch.ops.autograph.with_plan_for_shape(program, plan, positions + user_positions)
        except (RuntimeError, ValueError) as e:
            raise translate(e) from None
        inductor = report.get("inductor") or {}
        line.update(stages=report.get("stages"), streams=report.get("streams"), chosen=report.get("chosen"),
                    measured_ms=report.get("measured_ms", -1), kept=inductor.get("kept", "aten"),
                    seconds=round(time.perf_counter() - start, 3))
    return program, lines


def _with_graph_for_other_shapes(ep: ExportedProgram, program: str, weights: List[torch.Tensor],
                                 tensors: List[torch.Tensor], structured, target: torch.device,
                                 moved: Dict[Any, torch.Tensor], compile_parts: bool,
                                 measure: bool, probes: Sequence[Any] = ()) -> Tuple[str, List[torch.Tensor], Dict[str, Any]]:
    """The program with `ep`'s own graph (sizes computed) beside the plan, for inputs of other shapes;
    the tensors to pass after the user's (the weights that graph reads which the plan's inputs do not
    hold, or the package Inductor compiled for every shape, when that runs other shapes instead); and
    what the report says of it. `probes`: more (args, kwargs) the package is measured at (the listed
    shapes, else one larger shape)."""
    decomposed = ep.run_decompositions({})
    graph, graph_weights, _ = _import(decomposed, symbolic=True, sizes=_symbol_sizes(decomposed, tensors))
    num_inputs = len(tensors)
    user_positions = [len(weights) + i for i in range(num_inputs)]
    summary: Dict[str, Any] = {"other_shapes": "aten"}
    run = _every_shape_package(decomposed, graph, structured, target, measure, summary, probes) if compile_parts else None
    if run is not None:  # the package runs other shapes; the graph only describes their sizes
        run_graph, package = run
        positions = [-1] * len(graph_weights) + user_positions
        try:
            program = torch.ops.autograph.with_graph_for_other_shapes(
                program, json.dumps(graph), positions, json.dumps(run_graph),
                [len(weights) + num_inputs] + user_positions)
        except (RuntimeError, ValueError) as e:
            raise translate(e) from None
        return program, [package], summary
    extra: List[torch.Tensor] = []
    positions = _passed_positions([_to_device(w, target, moved) for w in graph_weights], weights, num_inputs, extra)
    positions += user_positions
    try:
        program = torch.ops.autograph.with_graph_for_other_shapes(program, json.dumps(graph), positions)
    except (RuntimeError, ValueError) as e:
        raise translate(e) from None
    return program, extra, summary


def _symbol_sizes(ep: ExportedProgram, tensors: List[torch.Tensor]) -> Dict[Any, int]:
    """Each symbol that is a size of a user input of `ep` -> that size in `tensors` (the inputs optimize
    was given, which need not be the exported example's)."""
    import sympy
    sizes: Dict[Any, int] = {}
    for node, tensor in zip(_user_inputs(ep), tensors):
        for d, n in zip(node.meta["val"].shape, tensor.shape):
            if not isinstance(d, int) and isinstance(d.node.expr, sympy.Symbol):
                sizes[d.node.expr] = int(n)
    return sizes


def _every_shape_package(decomposed: ExportedProgram, graph: Dict[str, Any], structured, target: torch.device,
                         measure: bool, summary: Dict[str, Any], probes: Sequence[Any] = ()):
    """The whole program compiled by Inductor for every shape in its range, as (the AtenGraph that runs it,
    the package as a tensor) when its outputs match the program's at the example's shapes and (with
    `measure`) it runs faster than the program's own graph on ATen's kernels there and at each of
    `probes` (more (args, kwargs): the shapes the user listed, else one larger shape; a package for every
    shape can lose to ATen's kernels at some); else None. The summary gets the times,
    the compile seconds and any error."""
    import tempfile
    from . import inductor_parts as parts_module
    start = time.perf_counter()
    try:
        package, specs, cached = parts_module.compile_for_every_shape(decomposed, target, _progress)
        summary["compile_s"] = round(time.perf_counter() - start, 3)
        summary["cached"] = cached
        with tempfile.TemporaryDirectory() as workdir:
            path = os.path.join(workdir, "every_shape.pt2")
            with open(path, "wb") as f:
                f.write(package)
            # (Python's loader asks Inductor for the CPU's vector ISA, also when the package was cached)
            from .inductor_toolchain import remember_vec_isa_checks
            remember_vec_isa_checks()
            compiled = torch._inductor.aoti_load_package(path)
        eager = decomposed.module()
        args, kwargs = structured
        with torch.no_grad():
            why = _mismatch(pytree.tree_leaves(compiled(*args, **kwargs)), pytree.tree_leaves(eager(*args, **kwargs)),
                            "the program")
            if why:
                summary["error"] = why
                return None
            if measure:
                times = _time_callables({"inductor": lambda: compiled(*args, **kwargs),
                                         "aten": lambda: eager(*args, **kwargs)}, target)
                summary["median_ms"] = {k: round(v, 4) for k, v in times.items()}
                if times["inductor"] >= times["aten"]:
                    return None
                for probe_args, probe_kwargs in probes:
                    times = _time_callables({"inductor": lambda: compiled(*probe_args, **probe_kwargs),
                                             "aten": lambda: eager(*probe_args, **probe_kwargs)}, target)
                    shapes = [list(t.shape) for t in pytree.tree_leaves((probe_args, probe_kwargs))]
                    summary.setdefault("median_ms_at", []).append(
                        {"shapes": shapes, **{k: round(v, 4) for k, v in times.items()}})
                    if times["inductor"] >= times["aten"]:
                        return None
    except Exception as e:  # noqa: BLE001 - other shapes then run the program's graph; the report says why
        summary["error"] = f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"[:300]
        return None
    summary["other_shapes"] = "inductor"
    values = graph["values"]
    user_inputs = [values[v] for v, w in zip(graph["inputs"], graph["weights"]) if not w]
    run_graph = parts_module.package_graph(package, specs, user_inputs, [values[v] for v in graph["outputs"]], target)
    return run_graph, torch.frombuffer(bytearray(package), dtype=torch.uint8)  # read on the CPU by the loader


# Racing, as the C++ side times schedules (executor/run_timing.h): after this many rounds a callable whose
# fastest run is slower than the lowest median by more than the margin runs no more rounds, and the
# timing stops when the medians left are all within the tie of the lowest. One whose fastest run is
# more than _RACE_FAR times the lowest median leaves after the first round.
_RACE_AFTER, _RACE_MARGIN, _RACE_TIE, _RACE_FAR = 3, 0.05, 0.01, 2.0
# On CPU, how long a callable runs untimed before each timed run (at least once): the other candidates'
# thread pools go idle meanwhile. Inductor's and ATen's OpenMP workers spin for milliseconds after
# their last parallel region (libgomp's default spin count); rnntc_sru's OpenVINO part, 1.5 ms alone on
# the 2-core VM, measured 1.65 or 2.75 ms (two timings in a row) straight after one untimed run of its
# own, as Inductor's code had left the workers.
_SETTLE_MS = 10.0


def _time_callables(calls: Dict[str, Any], device: torch.device, rounds: int = 10) -> Dict[str, float]:
    """Median ms of each callable, run in alternation (after two untimed warm-up runs each on a GPU; on
    CPU the settling below warms them up); one clearly slower after _RACE_AFTER rounds (or far slower
    after the first) stops (its median is then of fewer runs, and still the slower), and all stop when
    those left are tied. On CPU each timed run follows _SETTLE_MS of untimed runs of the same callable
    (at least one): the previous callable's thread pool may still be busy. OpenMP's workers spin after Inductor's or ATen's code, and an OpenVINO part run
    straight after them took 8.9 ms instead of 6.2 ms (squeezenet, 2 cores). A model called in a loop
    meets itself, not its rivals."""
    sync = torch.cuda.synchronize if device.type == "cuda" else (lambda: None)
    settle_s = _SETTLE_MS / 1e3 if device.type == "cpu" else None
    samples: Dict[str, List[float]] = {name: [] for name in calls}
    racing = set(calls)
    with torch.no_grad():
        if settle_s is None:
            for call in calls.values():
                call()
                call()
            sync()
        for r in range(rounds):
            for name, call in calls.items():
                if name not in racing:
                    continue
                if settle_s is not None:
                    until = time.perf_counter() + settle_s
                    call()
                    while time.perf_counter() < until:
                        call()
                begin = time.perf_counter()
                call()
                sync()
                samples[name].append((time.perf_counter() - begin) * 1e3)
            if len(racing) > 1:
                lowest = min(statistics.median(samples[name]) for name in racing)
                slower = _RACE_MARGIN if r + 1 >= _RACE_AFTER else _RACE_FAR - 1
                racing = {name for name in racing if min(samples[name]) <= lowest * (1 + slower)}
                if len(racing) == 1 or r + 1 >= _RACE_AFTER and all(
                        statistics.median(samples[name]) <= lowest * (1 + _RACE_TIE) for name in racing):
                    break
    return {name: statistics.median(s) for name, s in samples.items()}


def _storage_key(t: torch.Tensor):
    return (t.data_ptr() if t.numel() else id(t), tuple(t.shape), tuple(t.stride()), t.dtype, str(t.device))


def _passed_positions(needed: Sequence[torch.Tensor], weights: List[torch.Tensor], num_inputs: int,
                      extra: List[torch.Tensor]) -> List[int]:
    """Where each of `needed` is among the tensors ExecuteProgram passes (`weights`, the user's
    `num_inputs` tensors, then `extra`): a tensor passed already is found by storage, any other is
    appended to `extra` (once, however often it is needed)."""
    index_of = {_storage_key(w): i for i, w in enumerate(weights)}
    for j, w in enumerate(extra):
        index_of.setdefault(_storage_key(w), len(weights) + num_inputs + j)
    positions = []
    for w in needed:
        key = _storage_key(w)
        if key not in index_of:
            index_of[key] = len(weights) + num_inputs + len(extra)
            extra.append(w)
        positions.append(index_of[key])
    return positions


def _upper_bound(ep: ExportedProgram, symbol) -> Optional[int]:
    """The largest value `ep`'s range constraints allow a size symbol, or None when unbounded."""
    import sympy
    from torch.utils._sympy.numbers import int_oo
    bounds = ep.range_constraints.get(symbol)
    return None if bounds is None or bounds.upper in (int_oo, sympy.oo) else int(bounds.upper)


def _dynamic_shapes_of(ep: ExportedProgram, module, args, kwargs):
    """The optimized program's dynamic_shapes: each user input's symbolic dims as `ep` has them (one
    torch.export.Dim per symbol, with its range)."""
    import sympy
    dims: Dict[Any, Any] = {}
    collection = torch.export.ShapesCollection()
    for node, tensor in zip(_user_inputs(ep), pytree.tree_leaves((tuple(args), dict(kwargs)))):
        spec = {}
        for k, d in enumerate(node.meta["val"].shape):
            if isinstance(d, int):
                continue
            expr = d.node.expr
            if not isinstance(expr, sympy.Symbol):
                spec[k] = torch.export.Dim.AUTO
                continue
            if expr not in dims:
                bounds = ep.range_constraints.get(expr)
                lower = int(bounds.lower) if bounds is not None else 0
                dims[expr] = torch.export.Dim(str(expr), min=lower, max=_upper_bound(ep, expr))
            spec[k] = dims[expr]
        if spec:
            collection[tensor] = spec
    return collection.dynamic_shapes(module, tuple(args), dict(kwargs))


def _plan(graph: Dict[str, Any], tensors: List[torch.Tensor], settings: Dict[str, Any]) -> Tuple[str, Dict[str, Any]]:
    try:
        program, report = torch.ops.autograph.optimize_exported(json.dumps(graph), tensors, json.dumps(settings))
    except (RuntimeError, ValueError) as e:
        raise translate(e) from None
    return program, json.loads(report)


def _planned(graph: Dict[str, Any], tensors: List[torch.Tensor], settings: Dict[str, Any]) -> Tuple[str, Dict[str, Any]]:
    """_plan, its report without the resolved options that only the first plan passes on."""
    program, report = _plan(graph, tensors, settings)
    for key in ("check_rewrites", "inductor", "openvino"):
        report.pop(key, None)
    return program, report


def _measures_rewrites(settings: Dict[str, Any]) -> bool:
    from .settings import Settings
    return bool(settings.get("check_rewrites", Settings.check_rewrites))


def _fused_for_cudnn(decomposed: ExportedProgram, target: torch.device,
                     moved: Dict[Any, torch.Tensor]) -> Optional[Tuple[Dict[str, Any], List[torch.Tensor]]]:
    """On CUDA, the graph with convolution (+ add) + relu as cuDNN's fused operators
    (export_rewrites.fuse_conv_relu_cudnn) and its weights on `target`, where that changes anything;
    else None. Planned too, it competes as "aten_cudnn" beside the plan on ATen's kernels (the
    TorchScript path's fold_conv_relu, measured); Inductor's candidates are cut from the unfused graph,
    since to Inductor the fused operators would be opaque calls in place of what it fuses itself."""
    from .export_rewrites import fuse_conv_relu_cudnn
    fused = fuse_conv_relu_cudnn(decomposed, target)
    if fused is decomposed:
        return None
    graph, weights, _ = _import(fused)
    return graph, [_to_device(w, target, moved) for w in weights]


def _plan_and_compile(decomposed: ExportedProgram, graph: Dict[str, Any], imported: "_Imported",
                      weights: List[torch.Tensor], tensors: List[torch.Tensor], settings: Dict[str, Any],
                      fused: Optional[Tuple[Dict[str, Any], List[torch.Tensor]]] = None):
    """The plan of `graph` and, with option `inductor`, its Inductor candidates (_with_inductor_parts;
    where _compiles_beside_search, the whole graph's compile starts before the search and runs beside it;
    where _compiles_before_search, the whole graph's candidates are made first and the search's on-board
    verification waits until the plan on ATen's kernels could be kept). `fused` (_fused_for_cudnn), where
    rewrites are measured, is planned the same way and competes with them.
    Returns the program, its weights, the report, whether rewrites are measured and whether Inductor
    parts were wanted."""
    from . import inductor_parts as parts_module
    from .settings import Settings
    device = torch.device(settings["device"])
    builder = parts_module.PartBuilder(decomposed, graph, imported.value_of, imported.weights, device,
                                       progress=_progress)
    ready: Dict[str, Any] = {}
    try:
        if settings.get("inductor", Settings.inductor) and _compiles_beside_search(device):
            builder.compile_in_background(parts_module.every_node(graph), "whole part 1/1")
        elif settings.get("inductor", Settings.inductor) and _compiles_before_search(device, settings):
            ready = _compile_before_search(builder, graph)
        # With candidates made first, the plan is verified on board only where it measures close to them
        # (_verified_if_close): the search alone times nothing on CPU, and runs while OpenVINO converts.
        planning = dict(settings, verify=0) if ready else settings
        program, report = _plan(graph, weights + tensors, planning)
        measure = report.pop("check_rewrites")
        compile_parts = report.pop("inductor")
        settings = dict(settings, openvino=report.pop("openvino", True))  # as the options resolved it
        plans = {}
        if fused is not None and measure:
            fused_program, fused_report = _planned(fused[0], fused[1] + tensors, planning)
            plans["aten_cudnn"] = (fused_program, fused[1], fused_report, 0)
        if compile_parts or plans:
            program, weights, report = _with_inductor_parts(builder, graph, program, weights, tensors, settings,
                                                            report, measure, ready, plans, compile_parts)
        elif ready:  # planned without verification for candidates that are not wanted after all
            program, _, report, _ = _verified(graph, weights, tensors, settings) or (program, None, report, 0)
    finally:
        builder.close()
    return program, weights, report, measure, compile_parts


def _compiles_beside_search(device: torch.device) -> bool:
    """Whether the whole graph's Inductor compile runs on a thread beside the search: when the search
    times its candidates on a GPU, which the compile (mostly a CPU's work) leaves alone. A CPU's search
    times them on every core: on the 2-core VM, one core kept busy beside it made resnet50's plan take
    13-17 s instead of 0.9 s (its timing threads wait on each other), so on CPU the two run one after
    the other. Not yet measured on a GPU: Triton's autotuning runs kernels there while it compiles, which
    may disturb the search's timing (the final choice among candidates is timed after both finish)."""
    return device.type == "cuda"


def _compiles_before_search(device: torch.device, settings: Dict[str, Any]) -> bool:
    """Whether the whole graph's candidates are started before the search (_compile_before_search): on
    CPU, where OpenVINO's candidate competes and the candidates are timed (options openvino and
    check_rewrites, as they default), and the search's cost model times nothing (analytical, CPU's
    default), so it can run beside OpenVINO's conversion."""
    from .settings import Settings
    if device.type != "cpu" or not settings.get("openvino", Settings.openvino) \
            or not settings.get("check_rewrites", Settings.check_rewrites) \
            or settings.get("cost") not in (None, "analytical"):  # a measured search times on the CPU
        return False
    from . import openvino_parts
    return openvino_parts.available()


def _compile_before_search(builder: "PartBuilder", graph: Dict[str, Any]) -> Dict[str, Any]:
    """The whole graph's candidates started before the search, which they do not need: OpenVINO's
    conversion in its process of its own (the longest step of an optimize on CPU: bert_base, 2-core VM,
    8.5 s alone), and beside it Inductor's just-in-time compile of the whole graph (a _JustInTime; none
    when its package is in the disk cache). Returns {"whole": _JustInTime, "whole_openvino": a call that
    waits for the conversion}, or the exception that stopped a candidate, for inductor_candidates."""
    from . import inductor_parts as parts_module
    part = parts_module.every_node(graph)
    ready: Dict[str, Any] = {}
    try:
        ready["whole_openvino"] = builder.start_openvino(part, "whole_openvino part 1/1")
    except Exception as e:  # noqa: BLE001 - the candidate is dropped and the report says why
        ready["whole_openvino"] = e
    if not builder.is_cached(part):
        try:
            ready["whole"] = _JustInTime(*builder.compile_just_in_time(part, "whole part 1/1"), part, "whole part 1/1",
                                         True)
        except Exception as e:  # noqa: BLE001 - as above
            ready["whole"] = e
    return ready


def _with_inductor_parts(builder: "PartBuilder", graph: Dict[str, Any], program: str,
                         weights: List[torch.Tensor], tensors: List[torch.Tensor], settings: Dict[str, Any],
                         report: Dict[str, Any], measure: bool,
                         ready: Optional[Dict[str, Any]] = None, plans: Optional[Dict[str, Any]] = None,
                         compile_parts: bool = True) -> Tuple[str, List[torch.Tensor], Dict[str, Any]]:
    """The plan with parts compiled by Inductor (inductor_parts.py) where a candidate measures faster
    than the plan on ATen's kernels (`measure`; else the finest candidate is kept unmeasured). A
    candidate competes only with outputs close to the plan's in full float32 precision (_reference,
    _judged). The report's "inductor" entry says what was compiled, checked, timed and kept: each
    competing candidate's error and time ("candidates"), each other one's reason ("dropped"), the
    reference ("reference"), how the kept program runs (its entry's "streams" and "cuda_graph") and the
    warnings raised meanwhile ("warnings", shown as usual as well). A candidate compiled just in time
    (_JustInTime) that measures fastest is packaged then (_packaged_winner). `ready`: candidates made
    before the search (_compile_before_search). `plans`: other plans on ATen's kernels that compete
    ({name: (program, weights, report, 0)}: "aten_cudnn"); without `compile_parts` they alone compete
    with the plan."""
    from .candidate_check import RecordedWarnings, rounded
    start = time.perf_counter()
    candidates, errors, cached = inductor_candidates(builder, graph, program, weights, tensors, settings,
                                                     ready=ready) if compile_parts else ({}, {}, 0)
    candidates.update(plans or {})
    summary: Dict[str, Any] = {"compile_s": round(time.perf_counter() - start, 3), "cached_parts": cached,
                               "errors": errors, "candidates": {name: _described(c) for name, c in candidates.items()}}
    dropped = {name: {"why": "not available" if isinstance(why, _NotAvailable) else "not built", "detail": why}
               for name, why in errors.items()}
    not_available = sorted(name for name, why in errors.items() if isinstance(why, _NotAvailable))
    if not_available:
        summary["not_available"] = not_available
    candidates["aten"] = (program, weights, report, 0)
    times: Dict[str, float] = {}
    with RecordedWarnings() as recorded:
        reference = _reference(candidates, tensors, graph, settings, recorded)
        summary["reference"] = reference.summary()
        summary["candidates"]["aten"] = {"error": summary["reference"]["user_error"]}
        for name, (error, why, bound) in _judged(candidates, tensors, graph, reference, recorded).items():
            if why:  # not kept, whatever its speed
                errors[name] = why
                failed = why.startswith(_RUN_FAILED)
                dropped[name] = {"why": "failed to run" if failed else "wrong output", "error": rounded(error),
                                 "bound": rounded(bound), "detail": why}
                del candidates[name]
                del summary["candidates"][name]
            else:
                summary["candidates"][name]["error"] = rounded(error)
        verified = not ready  # the ATen plan is verified on board where it could be kept (_verified_if_close)
        if measure and len(candidates) > 1:
            times = _time_candidates(candidates, tensors, graph)
            for name, ms in times.items():
                summary["candidates"].setdefault(name, {})["median_ms"] = round(ms, 4)
            if ready:
                verified = _verified_if_close(candidates, times, summary, graph, weights, tensors, settings)
            best = min(times, key=times.get)
            if isinstance(candidates[best], _JustInTime):
                best = _packaged_winner(best, candidates, times, summary, builder, graph, program, weights, tensors,
                                        settings, reference, recorded)
        else:  # the finest packaged candidate
            best = next(name for name in ("plan", "whole", "aten")
                        if name in candidates and not isinstance(candidates[name], _JustInTime))
        if best == "aten" and not verified:  # kept (the fastest or the only one): verification picks its plan
            candidates["aten"] = _verified(graph, weights, tensors, settings) or candidates["aten"]
    summary["kept"] = best
    program, weights, chosen, _ = candidates[best]
    summary["candidates"][best].update(_how_it_runs(program, chosen, recorded.of(best)))
    summary["dropped"] = dict(dropped, **_not_kept(summary["candidates"], best, times))
    if recorded.caught:
        summary["warnings"] = recorded.listed()
    chosen = dict(chosen, inductor=summary)
    if best != "aten":  # what the user asked for, and the kept program's own measured time
        chosen["method"] = settings["method"]
        label = _LABELS.get(best, f"inductor {best}")
        chosen["chosen"] = label + (f" ({chosen['chosen']})" if chosen.get("chosen") else "")
        measured = summary["candidates"].get(best, {})
        if "median_ms" in measured:
            chosen["measured_ms"] = measured.get("packaged_ms", measured["median_ms"])
    for key in ("operators_before", "memory_bound_before"):
        chosen[key] = report.get(key, chosen.get(key))
    return program, weights, chosen


_LABELS = {"whole_openvino": "openvino whole", "aten_cudnn": "aten with cuDNN's fused conv+relu"}


def _how_it_runs(program: str, report: Dict[str, Any], messages: List[str]) -> Dict[str, Any]:
    """How the kept program runs, as its planner left it: the streams its schedule uses (the plan's
    report) and whether it replays a CUDA Graph (the program's own flag, off where a capture of it
    failed or was refused while it was checked and timed, `messages`)."""
    from .candidate_check import left_cuda_graph
    body = json.loads(program[program.index("\n") + 1:])
    graph_mode = bool(body.get("cuda_graph")) and not left_cuda_graph(messages)
    return {"streams": report.get("streams"), "cuda_graph": graph_mode}


def _not_kept(competing: Dict[str, Dict[str, Any]], best: str, times: Dict[str, float]) -> Dict[str, Dict[str, Any]]:
    """Why each of the `competing` candidates (their report entries) other than `best` was not kept."""
    why: Dict[str, Dict[str, Any]] = {}
    for name, entry in competing.items():
        if name == best:
            continue
        if name not in times:
            why[name] = {"why": "not timed", "detail": "check_rewrites is off: the finest candidate is kept"}
        elif entry.get("packaged", "yes") != "yes":
            why[name] = {"why": "not packaged", "detail": entry["packaged"]}
        else:
            why[name] = {"why": "slower", "median_ms": entry["median_ms"]}
    return why


def _verified(graph: Dict[str, Any], weights: List[torch.Tensor], tensors: List[torch.Tensor],
              settings: Dict[str, Any]) -> Optional[Tuple[str, List[torch.Tensor], Dict[str, Any], int]]:
    """The plan on ATen's kernels planned again with on-board verification (the search's best schedules
    and the one-stream and Nimble's, timed side by side), where the method verifies; else None."""
    if not _verifies(settings):
        return None
    program, report = _planned(graph, weights + tensors, settings)
    return program, weights, report, 0


def _verifies(settings: Dict[str, Any]) -> bool:
    """Whether the method verifies its plan on board (autograph, with option verify above 0)."""
    from .settings import Settings
    return settings["method"] == "autograph" and settings.get("verify", Settings.verify) > 0


def _verified_if_close(candidates: Dict[str, Any], times: Dict[str, float], summary: Dict[str, Any],
                       graph: Dict[str, Any], weights: List[torch.Tensor], tensors: List[torch.Tensor],
                       settings: Dict[str, Any]) -> bool:
    """Where the plan on ATen's kernels was planned without on-board verification (the candidates were
    made before the search) and measures within _RACE_MARGIN of the fastest compiled candidate (so it
    could be kept), it is verified now and timed once more beside that candidate (`candidates` and
    `times` updated); returns whether it was. Elsewhere verifying it would cost seconds for a plan that
    is not kept: bert_base's five schedules on ATen's kernels, 2-core VM, 4-6 s, at 2.4x the compiled
    candidates' time."""
    fastest = min((k for k in times if k != "aten"), key=times.get)
    if times["aten"] > times[fastest] * (1 + _RACE_MARGIN):
        return False
    verified = _verified(graph, weights, tensors, settings)
    if verified is None:
        return True  # the method does not verify: the plan is as it would be
    candidates["aten"] = verified
    again = _time_candidates({"aten": verified, fastest: candidates[fastest]}, tensors, graph)
    times.update(again)
    summary["candidates"]["aten"]["verified_ms"] = round(again["aten"], 4)
    summary["candidates"][fastest]["again_ms"] = round(again[fastest], 4)
    return True


class _JustInTime(NamedTuple):
    """A one-part Inductor candidate compiled just in time (PartBuilder.compile_just_in_time): timed and
    checked as a callable on the part's inputs, and packaged ahead of time only when it is kept."""
    call: Callable[..., Any]
    input_ids: List[int]
    output_ids: List[int]
    part: List[int]
    label: str
    freezing: bool

    def inputs(self, graph: Dict[str, Any], passed: List[torch.Tensor]) -> List[torch.Tensor]:
        """Its input tensors among those a program of `graph` is passed (its weights, then the user's)."""
        weights = [v for v, is_weight in zip(graph["inputs"], graph["weights"]) if is_weight]
        users = [v for v, is_weight in zip(graph["inputs"], graph["weights"]) if not is_weight]
        value = dict(zip(weights + users, passed))
        return [value[v] for v in self.input_ids]


def _described(candidate) -> Dict[str, Any]:
    if isinstance(candidate, _JustInTime):
        return {"parts": 1, "compiled": "just in time"}
    return {"parts": candidate[3]}


def _packaged_winner(name: str, candidates: Dict[str, Any], times: Dict[str, float], summary: Dict[str, Any],
                     builder: "PartBuilder", graph: Dict[str, Any], program: str, weights: List[torch.Tensor],
                     tensors: List[torch.Tensor], settings: Dict[str, Any], reference, recorded) -> str:
    """Which candidate to keep when `name`, compiled just in time, measured fastest: `name` packaged by
    AOTInductor (the same kernels) if that package, checked against `reference` (_judged, `recorded`
    as there) and timed once more side by side with the fastest packaged candidate, is faster; else
    that runner-up. A just-in-time lead under _RACE_MARGIN keeps the runner-up without packaging: the
    package's own calls can take it back (rnntc_sru, 2-core VM: 2.80 ms just in time, 3.10 ms packaged,
    against OpenVINO's 2.86 ms), and a package costs seconds."""
    from .candidate_check import rounded
    entry = summary["candidates"][name]
    packaged = {k: ms for k, ms in times.items() if not isinstance(candidates[k], _JustInTime)}
    runner_up = min(packaged, key=packaged.get)  # "aten" at least
    if times[name] >= packaged[runner_up] * (1 - _RACE_MARGIN):
        entry["packaged"] = f"no: tied with {runner_up}"
        return runner_up
    jit = candidates[name]
    start = time.perf_counter()
    try:
        compiled = [builder.compile(jit.part, jit.label, freezing=jit.freezing)]
        body = json.loads(program[program.index("\n") + 1:])
        candidates[name] = _program_with_parts(builder, graph, weights, tensors, settings, body, [jit.part],
                                               compiled)
        error, why, _ = _judged({"aten": candidates["aten"], name: candidates[name]}, tensors, graph, reference,
                                recorded)[name]
        if why:
            raise ValueError(why)
        entry["packaged_error"] = rounded(error)
    except Exception as e:  # noqa: BLE001 - the runner-up is kept and the report says why
        entry["packaged"] = f"failed: {_why(e)}"
        return runner_up
    finally:
        summary["compile_s"] = round(summary["compile_s"] + time.perf_counter() - start, 3)
    again = _time_candidates({k: candidates[k] for k in (runner_up, name)}, tensors, graph)
    entry["packaged"] = "yes"
    entry["packaged_ms"] = round(again[name], 4)
    summary["candidates"][runner_up]["again_ms"] = round(again[runner_up], 4)
    return name if again[name] < again[runner_up] else runner_up


def _progress(message: str) -> None:
    """What optimize is doing while Inductor compiles (tens of seconds a part): on a terminal, a line on
    stderr; elsewhere the "autograph" logger's info."""
    if sys.stderr.isatty():
        print(f"autograph: {message}", file=sys.stderr, flush=True)
    else:
        _log.info("autograph: %s", message)


class _NotAvailable(str):
    """Why an optional compiler's candidate is missing (its package is not installed): reported like an
    error, but not one that strict=True raises for."""


def inductor_candidates(builder: "PartBuilder", graph: Dict[str, Any], program: str,
                        weights: List[torch.Tensor], tensors: List[torch.Tensor], settings: Dict[str, Any],
                        ready: Optional[Dict[str, Any]] = None):
    """The programs with parts compiled by Inductor (by `builder`, inductor_parts.PartBuilder): "whole"
    (the graph as one part), "plan" (its parts)
    when the plan in `program` runs groups side by side, "whole_unfrozen" (no freezing) when a weight
    feeds several compute-bound operators (inductor_parts.shares_weights), and on CPU "whole_openvino"
    (the graph as one OpenVINO part, converted in a process of its own while Inductor compiles the
    others); each planned again over its parts.
    `ready`: what _compile_before_search made of a candidate (a _JustInTime, a call that waits for its
    package, or the exception that stopped it) stands for compiling it here. Where OpenVINO's candidate competes, the
    whole graph's Inductor candidate is such a _JustInTime, in place of a program: on the 2-core VM
    OpenVINO's was the fastest on all eight zoo models, and Inductor's ahead-of-time package costs 2-3x
    its just-in-time compile (bert_base 11.2 s, 4.4 s).
    Returns {name: (program, weights, report, parts) or _JustInTime}, {name: why it could not be built}
    and how many parts came from the disk cache."""
    from . import inductor_parts as parts_module
    device = torch.device(settings["device"])
    body = json.loads(program[program.index("\n") + 1:])
    cuts = {"whole": parts_module.whole_graph_part(body)}
    plan_parts = builder.closed(parts_module.parts_of_plan(body))
    # Not from a plan that is to be verified later (_compile_before_search): its concurrency is the
    # analytical model's guess. resnext50's unverified plan had 4 parts, 19.7 s of compiles, and ran no
    # faster than the whole graph's (22.4 / 22.0 ms); the verified plan left no parts to compile.
    if 1 < len(plan_parts) <= parts_module.MAX_PARTS and not (ready and _verifies(settings)):
        cuts["plan"] = plan_parts
    if parts_module.shares_weights(graph, body, builder.packs_linear_at_run_time()):
        cuts["whole_unfrozen"] = cuts["whole"]
    built, errors = {}, {}
    if device.type == "cpu" and settings.get("openvino", True):
        from . import openvino_parts
        from ._library import openvino_missing
        missing = openvino_missing()
        if missing:  # the report says why the candidate the option asks for is not there
            errors["whole_openvino"] = _NotAvailable(f"OpenVINO's candidate is not available: {missing}")
        else:
            cuts["whole_openvino"] = cuts["whole"]
    ready = ready or {}
    labels = {name: [f"{name} part {k + 1}/{len(parts)}" for k in range(len(parts))] for name, parts in cuts.items()}
    converting = []  # OpenVINO's conversion starts first: it runs in a process of its own beside Inductor
    if "whole_openvino" in cuts and "whole_openvino" not in ready:
        try:
            converting = [builder.start_openvino(p, label)
                          for p, label in zip(cuts["whole_openvino"], labels["whole_openvino"])]
        except Exception as e:  # noqa: BLE001 - the candidate is dropped and the report says why
            errors["whole_openvino"] = _why(e)
    for name, parts in cuts.items():
        if name in errors:
            continue
        try:
            made = ready.get(name)
            if isinstance(made, Exception):
                raise made
            if isinstance(made, _JustInTime):
                built[name] = made
                continue
            if name == "whole_openvino":
                compiled = [made()] if made else [result() for result in converting]
                call = {"op": openvino_parts.PART_OP, "fmt": openvino_parts.FORMAT}
            else:
                compiled = [builder.compile(p, label, freezing=name != "whole_unfrozen")
                            for p, label in zip(parts, labels[name])]
                call = {}
            built[name] = _program_with_parts(builder, graph, weights, tensors, settings, body, parts, compiled, **call)
        except Exception as e:  # noqa: BLE001 - the candidate is dropped and the report says why
            errors[name] = _why(e)
    return built, errors, builder.cached


def _program_with_parts(builder: "PartBuilder", graph: Dict[str, Any], weights: List[torch.Tensor],
                        tensors: List[torch.Tensor], settings: Dict[str, Any], body: Dict[str, Any],
                        parts: List[List[int]], compiled, **call) -> Tuple[str, List[torch.Tensor], Dict[str, Any], int]:
    """The program with each of `parts` one call of its compiled package (rewrite_with_parts), planned
    again over the parts: (program, weights, report, number of parts)."""
    from . import inductor_parts as parts_module
    rewritten, kept_weights = parts_module.rewrite_with_parts(graph, weights, body, parts, compiled, builder.device,
                                                              **call)
    # One part leaves nothing to plan (the search and its on-board timing would take seconds on a large
    # graph for the same one-step schedule).
    part_settings = dict(settings, method="sequential") if len(parts) == 1 else settings
    rewritten_program, rewritten_report = _planned(rewritten, kept_weights + tensors, part_settings)
    return rewritten_program, kept_weights, rewritten_report, len(parts)


def _why(e: Exception) -> str:
    return f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"


def _mismatch(got: Sequence[torch.Tensor], want: Sequence[torch.Tensor], what: str) -> Optional[str]:
    """How `got` differs from `want` (the outputs of `what`) beyond the float32 floor of each output's
    scale (candidate_check.floor_of; exactly, for integer outputs), or None when they agree."""
    from .candidate_check import Reference
    return Reference(want).judge(got, what)[1]


def _call_of(candidate, graph: Optional[Dict[str, Any]], aten_weights: Optional[List[torch.Tensor]],
             tensors: List[torch.Tensor]) -> Callable[[], Any]:
    """A candidate as a call without arguments: a program run on its own weights and the user's
    `tensors`, or a _JustInTime callable on its inputs among those of the ATen plan's program
    (`aten_weights`, then `tensors`), which `graph` places."""
    if isinstance(candidate, _JustInTime):
        inputs = candidate.inputs(graph, aten_weights + tensors)
        return lambda: candidate.call(*inputs)
    program, passed = candidate[0], candidate[1] + tensors
    return lambda: torch.ops.autograph.execute(passed, program)


def _reference(candidates, tensors: List[torch.Tensor], graph: Dict[str, Any], settings: Dict[str, Any],
               recorded) -> Any:
    """What the candidates are judged against (candidate_check.Reference): the outputs of the plan on
    ATen's kernels ("aten") on the example inputs under the user's settings and, where those round
    float32 matmuls or convolutions on the device (TF32), the same graph run once more in full
    precision, planned one operator at a time without a CUDA Graph (a graph would replay the kernels
    captured under the user's settings). Timing keeps the user's settings. `recorded`: as _judged's."""
    from .candidate_check import reference_of
    program, weights = candidates["aten"][0], candidates["aten"][1]

    def in_full() -> List[torch.Tensor]:
        plain, _ = _planned(graph, weights + tensors, dict(settings, method="sequential", cuda_graph=False))
        with torch.no_grad():
            return list(torch.ops.autograph.execute(weights + tensors, plain))

    with torch.no_grad(), recorded.running("aten"):
        user = list(torch.ops.autograph.execute(weights + tensors, program))
    return reference_of(user, torch.device(settings["device"]), in_full)


_RUN_FAILED = "its run failed"


def _judged(candidates, tensors: List[torch.Tensor], graph: Dict[str, Any], reference,
            recorded) -> Dict[str, Tuple[float, Optional[str], Optional[float]]]:
    """Each candidate but "aten" run once on the example inputs (a _JustInTime's outputs are some of
    the program's, which `graph` places) and judged against `reference` (_reference): {name: (largest
    error relative to each output's scale, why its outputs are wrong or None, the bound missed)}. A
    wrong candidate is not kept, whatever its speed. `recorded` (candidate_check.RecordedWarnings)
    gives each run's warnings to its candidate."""
    aten_weights = candidates["aten"][1]
    judged = {}
    with torch.no_grad():
        for name, candidate in candidates.items():
            if name == "aten":
                continue
            try:
                with recorded.running(name):
                    got = list(_call_of(candidate, graph, aten_weights, tensors)())
            except Exception as e:  # noqa: BLE001 - a package that does not load or run: dropped, the report says why
                judged[name] = (math.nan, f"{_RUN_FAILED}: {_why(e)}", None)
                continue
            positions = ([graph["outputs"].index(v) for v in candidate.output_ids]
                         if isinstance(candidate, _JustInTime) else None)
            judged[name] = reference.judge(got, "the plan", positions)
    return judged


def _time_candidates(candidates, tensors: List[torch.Tensor], graph: Dict[str, Any],
                     rounds: int = 10) -> Dict[str, float]:
    """Median ms of each candidate (a program, or a _JustInTime callable on the inputs of the program
    `candidates["aten"]`), run in alternation on the device (_time_callables)."""
    device = tensors[0].device if tensors else torch.device("cpu")
    aten_weights = candidates["aten"][1] if "aten" in candidates else None  # what a _JustInTime reads
    calls = {name: _call_of(c, graph, aten_weights, tensors) for name, c in candidates.items()}
    return _time_callables(calls, device, rounds)


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
        header = json.loads(program[:program.index("\n")])
        device = torch.device(header["device"])
        if header.get("dynamic"):  # sizes follow the inputs': run the graph for other shapes on them
            graph, positions = _graph_for_other_shapes(header["digest"], program)
            values = graph["values"]
            # A weight that is not passed (a package runs other shapes) is made from its metadata.
            fed = [inputs[p] if p >= 0 else
                   torch.empty_strided(values[v]["shape"], values[v]["stride"],
                                       dtype=_DTYPES_BY_NAME[values[v]["dtype"]], device=device)
                   for p, v in zip(positions, graph["inputs"])]
            outputs = _run_graph_fake(graph, fed)
            return [torch.empty_strided(o.shape, o.stride(), dtype=o.dtype, device=device) for o in outputs]
        return [torch.empty_strided(o["shape"], o["stride"], dtype=_DTYPES_BY_NAME[o["dtype"]], device=device)
                for o in header["outputs"]]

    @torch.library.register_fake("autograph::packed_linear")
    def _packed_linear_fake(x, weight, bias=None):
        return torch.nn.functional.linear(x, weight, bias)

    _FAKE_REGISTERED = True


_GRAPHS_FOR_OTHER_SHAPES: Dict[str, Tuple[Dict[str, Any], List[int]]] = {}


def _graph_for_other_shapes(digest: str, program: str) -> Tuple[Dict[str, Any], List[int]]:
    if digest not in _GRAPHS_FOR_OTHER_SHAPES:
        other = json.loads(program[program.index("\n") + 1:])["other_shapes"]
        _GRAPHS_FOR_OTHER_SHAPES[digest] = (other["graph"], other["inputs"])
    return _GRAPHS_FOR_OTHER_SHAPES[digest]


_LAYOUTS_BY_NAME = {name: layout for layout, name in _LAYOUT_NAMES.items()}
_MEMORY_FORMATS_BY_NAME = {name: f for f, name in _MEMORY_FORMAT_NAMES.items()}


# A tagged constant of the importer's JSON (_constant) back to its Python value.
_CONSTANT_OF_TAG = {"float": float, "str": str, "ints": list, "bools": list, "device": torch.device,
                    "floats": lambda xs: [float(e) for e in xs], "dtype": _DTYPES_BY_NAME.__getitem__,
                    "layout": _LAYOUTS_BY_NAME.__getitem__, "memory_format": _MEMORY_FORMATS_BY_NAME.__getitem__}


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
            results = [_PYTHON_SCALAR_OPS[args[0]](*args[1:])]
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


__all__ = ["aten_graph_of", "optimize_exported", "register_fake", "ExecuteProgram"]
