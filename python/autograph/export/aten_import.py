"""An ExportedProgram's ATen graph as autograph's AtenGraph JSON, read straight from its FX graph (shapes,
strides and dtypes from the node metadata torch.export recorded; no TorchScript, no extra run).
Parameters, buffers and constants become the graph's first inputs and travel as tensors. Mutated
buffers or inputs, non-tensor inputs or outputs and non-ATen call targets are UnsupportedModelErrors
that name the TorchScript path."""
import dataclasses
import math
import operator
from typing import Any, Callable, Dict, List, Optional, Tuple

import torch
from torch.export import ExportedProgram
from torch.export.graph_signature import ExportGraphSignature, InputKind, OutputKind, TensorArgument

from ..errors import UnsupportedModelError
from .program_format import DTYPE_NAMES, LAYOUT_NAMES, MEMORY_FORMAT_NAMES

TORCHSCRIPT_HINT = ("; the TorchScript path may take it: autograph.optimize(model, inputs) on the nn.Module "
                    "(traced or scripted), or on a torch.jit module")


_WEIGHT_KINDS = (InputKind.PARAMETER, InputKind.BUFFER, InputKind.CONSTANT_TENSOR)


def aten_graph_of(ep: ExportedProgram) -> Tuple[Dict[str, Any], List[torch.Tensor]]:
    """The AtenGraph JSON of `ep` (run through its decompositions into the functional ATen IR, with no
    operator decomposed) and its weights in placeholder order (the user's inputs follow them)."""
    graph, weights, _ = import_graph(ep.run_decompositions({}))
    return graph, weights


class Imported:
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


PYTHON_SCALAR_OPS = {
    "add": operator.add, "sub": operator.sub, "mul": operator.mul, "floordiv": operator.floordiv,
    "truediv": operator.truediv, "mod": operator.mod, "pow": operator.pow, "neg": operator.neg, "abs": operator.abs,
    "eq": operator.eq, "ne": operator.ne, "lt": operator.lt, "le": operator.le, "gt": operator.gt, "ge": operator.ge,
    "and": operator.and_, "or": operator.or_, "max": torch.sym_max, "min": torch.sym_min, "float": torch.sym_float,
    "int": torch.sym_int, "not": torch.sym_not, "floor": math.floor, "ceil": math.ceil,
}


def user_inputs(ep: ExportedProgram) -> List[torch.fx.Node]:
    """The placeholders of `ep` that are the user's inputs (not weights), in order."""
    placeholders = [n for n in ep.graph.nodes if n.op == "placeholder"]
    return [n for n, spec in zip(placeholders, ep.graph_signature.input_specs) if spec.kind == InputKind.USER_INPUT]


def has_dynamic_shapes(ep: ExportedProgram) -> bool:
    """Whether any user input of `ep` has a symbolic size."""
    return any(isinstance(node.meta.get("val"), torch.Tensor) and any(not isinstance(d, int) for d in node.meta["val"].shape)
               for node in user_inputs(ep))


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
                                    "plans for sizes known from the inputs' shapes" + TORCHSCRIPT_HINT)
    return int(hint)


def import_graph(ep: ExportedProgram, symbolic: bool = False,
                 sizes: Optional[Dict[Any, int]] = None) -> Tuple[Dict[str, Any], List[torch.Tensor], Imported]:
    """aten_graph_of on a program already in functional ATen IR, with the FX-to-AtenGraph mapping.
    `symbolic`: the program may have dynamic shapes; sizes computed on symbols become values
    (aten::sym_size, autograph::scalar_op) and shapes are recorded at the example's sizes (`sizes`)."""
    sig = ep.graph_signature
    bad_outputs = [s.kind.name for s in sig.output_specs if s.kind != OutputKind.USER_OUTPUT]
    if bad_outputs:
        raise UnsupportedModelError(f"the exported program mutates its buffers or inputs ({', '.join(bad_outputs)}); "
                                    "the export path takes programs without mutations" + TORCHSCRIPT_HINT)
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
                                            "the export path takes tensor inputs" + TORCHSCRIPT_HINT)
            weights.append(False)
        elif spec.kind in _WEIGHT_KINDS:
            weights.append(True)
            weight_tensors.append(_weight(ep, spec))
        else:
            raise UnsupportedModelError(f"input '{node.name}' is a {spec.kind.name}, which the export path cannot "
                                        "pass" + TORCHSCRIPT_HINT)
        value_of[node] = new_value(node.meta.get("val"))
        inputs.append(value_of[node])
    if not any(not w for w in weights):
        raise UnsupportedModelError("the exported program takes no tensor input")

    nodes = []
    for node in ep.graph.nodes:
        if node.op in ("placeholder", "output"):
            continue
        entry = _node_entry(node, value_of, new_value, symbolic)
        if entry is not None:
            nodes.append(entry)

    outputs = []
    (returned,) = [n.args[0] for n in ep.graph.nodes if n.op == "output"]
    for r in returned:
        if not isinstance(r, torch.fx.Node) or isinstance(value_of[r], tuple) or not values[value_of[r]]["tensor"]:
            raise UnsupportedModelError("the exported program returns something other than a tensor "
                                        f"({r!r}); the export path returns tensors" + TORCHSCRIPT_HINT)
        outputs.append(value_of[r])
    graph = {"version": 1, "values": values, "inputs": inputs, "weights": weights, "nodes": nodes, "outputs": outputs}
    weight_of = {node.name: weight_tensors[sum(weights[:k])] for k, node in enumerate(placeholders) if weights[k]}
    return graph, weight_tensors, Imported({n.name: v for n, v in value_of.items()}, weight_of)


def _node_entry(node: torch.fx.Node, value_of: Dict[torch.fx.Node, Any], new_value: Callable[[Any], int],
                symbolic: bool) -> Optional[Dict[str, Any]]:
    """The AtenGraph node of the FX `node` (an operator call), its outputs given value ids (`new_value`,
    recorded in `value_of`); None for a getitem of one of several returns, which is that value itself."""
    if node.op != "call_function":
        raise UnsupportedModelError(f"node '{node.name}' ({node.op} {node.target}) is not an operator call; the "
                                    "export path takes flat ATen graphs" + TORCHSCRIPT_HINT)
    if node.target is operator.getitem:
        source, index = node.args
        produced = value_of[source]
        if isinstance(produced, tuple):  # one of several returns: that value itself
            value_of[node] = produced[index]
            return None
        value_of[node] = new_value(node.meta.get("val"))  # an element of a returned list
        return {"op": "getitem", "overload": "default", "name": node.name,
                "args": [{"value": produced}, index], "kwargs": {}, "outputs": [value_of[node]]}
    if symbolic and node.target in _SCALAR_OPS:
        args = [{"str": _SCALAR_OPS[node.target]}] + [_argument(a, value_of, node, None) for a in node.args]
        if node.kwargs or len(args) > 3:
            raise UnsupportedModelError(f"node '{node.name}' calls {node.target} with arguments autograph cannot pass")
        value_of[node] = new_value(node.meta.get("val"))
        return {"op": "autograph::scalar_op", "overload": "default", "name": node.name, "args": args,
                "kwargs": {}, "outputs": [value_of[node]]}
    if not isinstance(node.target, torch._ops.OpOverload):
        raise UnsupportedModelError(f"node '{node.name}' calls {node.target}, which is not an ATen-style operator "
                                    "(control flow or a Python function?)" + TORCHSCRIPT_HINT)
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
    return {"op": schema.name, "overload": schema.overload_name or "default", "name": node.name,
            "args": args, "kwargs": kwargs, "outputs": outputs}


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


def functional(ep: ExportedProgram) -> Optional[ExportedProgram]:
    """`ep` in functional ATen IR, as run_decompositions({}) gives it, without tracing it again (that
    is slow, the more so on a large graph such as NASNet's) where it is a renaming: every node an
    operator; an in-place one (relu_, add_ on a residual) writes only its first argument, a value a node
    of the graph made fresh (not a view, not an input) and that no view reads; it becomes its functional
    twin (relu, add), and what read that value after it reads its result. None where anything else is
    found (a higher-order op, a write to an input or a view, no twin, a mutation the signature lists):
    then run_decompositions. The weights are shared with `ep`, the graph is a copy."""
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
                                    "not a tensor" + TORCHSCRIPT_HINT)
    return t.detach()


def _value_info(meta, symbolic: bool = False, sizes: Optional[Dict[Any, int]] = None) -> Dict[str, Any]:
    if isinstance(meta, torch.Tensor):
        if not symbolic and (any(not isinstance(d, int) for d in meta.shape)
                             or any(not isinstance(s, int) for s in meta.stride())):
            raise UnsupportedModelError(f"the exported program makes a tensor whose size depends on its inputs' values "
                                        f"({list(meta.shape)}: nonzero, masked_select, a size read by .item()); the "
                                        "export path plans for sizes known from the inputs' shapes" + TORCHSCRIPT_HINT)
        if meta.dtype not in DTYPE_NAMES:
            raise UnsupportedModelError(f"dtype {meta.dtype} is not supported by the export path")
        return {"tensor": True, "shape": [_hint(d, sizes) for d in meta.shape],
                "stride": [_hint(d, sizes) for d in meta.stride()],
                "dtype": DTYPE_NAMES[meta.dtype]}
    if not symbolic and isinstance(meta, (torch.SymInt, torch.SymFloat, torch.SymBool)):
        raise UnsupportedModelError(f"the exported program computes a number from its inputs' values ({meta}: "
                                    ".item(), int() or float() of a tensor that is not a weight); the export path "
                                    "plans for numbers known from the inputs' shapes and the weights" + TORCHSCRIPT_HINT)
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
                                            "export path cannot carry" + TORCHSCRIPT_HINT)
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
        if a not in DTYPE_NAMES:
            raise UnsupportedModelError(f"node '{node.name}' uses dtype {a}, which the export path does not carry")
        return {"dtype": DTYPE_NAMES[a]}
    if isinstance(a, torch.device):
        return {"device": str(a)}
    if isinstance(a, torch.layout) and a in LAYOUT_NAMES:
        return {"layout": LAYOUT_NAMES[a]}
    if isinstance(a, torch.memory_format) and a in MEMORY_FORMAT_NAMES:
        return {"memory_format": MEMORY_FORMAT_NAMES[a]}
    if isinstance(a, (list, tuple)):
        if all(isinstance(e, bool) for e in a) and a:
            return {"bools": list(a)}
        if all(isinstance(e, int) and not isinstance(e, bool) for e in a):
            return {"ints": list(a)}
        if all(isinstance(e, (int, float)) and not isinstance(e, bool) for e in a):
            return {"floats": [repr(float(e)) for e in a]}
    if isinstance(a, (torch.SymInt, torch.SymFloat, torch.SymBool)):
        raise UnsupportedModelError(f"node '{node.name}' takes a symbolic size that is not computed by a node of "
                                    "the graph" + TORCHSCRIPT_HINT)
    raise UnsupportedModelError(f"node '{node.name}' ({node.target}) takes a constant {a!r} of type "
                                f"{type(a).__name__}, which the export path cannot carry" + TORCHSCRIPT_HINT)


def to_device(t: torch.Tensor, target: torch.device, moved: Dict[Any, torch.Tensor]) -> torch.Tensor:
    """t on `target`, one copy per tensor (the plan's and the dynamic graph's weights share storage)."""
    key = storage_key(t)
    if key not in moved:
        moved[key] = t.to(target)
    return moved[key]


def storage_key(t: torch.Tensor):
    return (t.data_ptr() if t.numel() else id(t), tuple(t.shape), tuple(t.stride()), t.dtype, str(t.device))


__all__ = ["aten_graph_of", "Imported", "import_graph", "functional", "has_dynamic_shapes", "user_inputs",
           "to_device", "storage_key", "TORCHSCRIPT_HINT", "PYTHON_SCALAR_OPS"]
