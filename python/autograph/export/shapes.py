"""Other shapes than the example's: a program with dynamic shapes is planned at the example's shapes and
keeps its own graph (sizes computed), or one package compiled by Inductor for every shape, for the
others; each shape of option `shapes` gets a plan of its own beside it."""
import json
import time
from typing import Any, Dict, List, Optional, Sequence, Tuple

import torch
from torch.export import ExportedProgram
from torch.utils import _pytree as pytree

from ..errors import InputError, UnsupportedModelError, translate
from ..settings import Settings
from .aten_import import functional, import_graph, storage_key, to_device, user_inputs
from .candidates import other_graphs
from .compilers import compile_for_every_shape, load_every_shape, package_graph
from .contest import mismatch, plan_and_compile
from .progress import progress
from .timing import time_callables


def specialized(ep: ExportedProgram, example_inputs, example_kwargs) -> ExportedProgram:
    """`ep` exported again at the example inputs' shapes: what the plan is made for."""
    try:
        return torch.export.export(ep.module(), tuple(example_inputs), dict(example_kwargs or {}), strict=False)
    except Exception as e:  # noqa: BLE001 - what export says is the message
        raise UnsupportedModelError(f"the program with dynamic shapes could not be exported at the example's shapes "
                                    f"to plan it: {str(e).splitlines()[0]}") from e


def shapes_of(text: Optional[str], tensors: List[torch.Tensor]) -> List[List[Tuple[int, ...]]]:
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


def resized(t: torch.Tensor, sizes: Sequence[int]) -> torch.Tensor:
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


def larger_shape(ep: ExportedProgram, tensors: List[torch.Tensor], factor: int = 4) -> List[List[Tuple[int, ...]]]:
    """One more shape to judge the package for every shape at when the user listed none: each dynamic
    dim `factor` times the example's, within its range (a package that wins at the example can lose at
    larger sizes); [] when that is the example's shape or a size is not a plain symbol's."""
    import sympy
    larger = {}
    for symbol, value in _symbol_sizes(ep, tensors).items():
        upper = _upper_bound(ep, symbol)
        larger[symbol] = value * factor if upper is None else min(upper, value * factor)
    shape = []
    for node, tensor in zip(user_inputs(ep), tensors):
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


def with_plans_for_shapes(ep: ExportedProgram, program: str, weights: List[torch.Tensor],
                          tensors: List[torch.Tensor], extra: List[torch.Tensor], in_spec, shapes,
                          target: torch.device, moved: Dict[Any, torch.Tensor],
                          settings: Settings) -> Tuple[str, List[Dict[str, Any]]]:
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
        progress(f"planning for shapes {'x'.join(map(str, shape[0]))}{', ...' if len(shape) > 1 else ''}")
        inputs = [resized(t, s) for t, s in zip(tensors, shape)]
        args, kwargs = pytree.tree_unflatten(inputs, in_spec)
        try:
            exported = torch.export.export(module, tuple(args), dict(kwargs), strict=False)
        except Exception as e:  # noqa: BLE001 - out of the exported range, most often: export says which dim
            raise InputError(f"shapes: the program cannot be exported at {line['shapes']}: "
                             f"{str(e).splitlines()[0]} (shapes must lie in the ranges of its dynamic dims)") from None
        decomposed = functional(exported) or exported.run_decompositions({})
        graph, plan_weights, imported = import_graph(decomposed)
        plan_weights = [to_device(w, target, moved) for w in plan_weights]
        others = other_graphs(decomposed, target, moved, settings)
        plan, plan_weights, report, _, _ = plan_and_compile(decomposed, graph, imported, plan_weights, inputs,
                                                            settings, others)
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


def with_graph_for_other_shapes(ep: ExportedProgram, program: str, weights: List[torch.Tensor],
                                tensors: List[torch.Tensor], structured, target: torch.device,
                                moved: Dict[Any, torch.Tensor], compile_parts: bool,
                                measure: bool, probes: Sequence[Any] = ()) -> Tuple[str, List[torch.Tensor], Dict[str, Any]]:
    """The program with `ep`'s own graph (sizes computed) beside the plan, for inputs of other shapes;
    the tensors to pass after the user's (the weights that graph reads which the plan's inputs do not
    hold, or the package Inductor compiled for every shape, when that runs other shapes instead); and
    what the report says of it. `probes`: more (args, kwargs) the package is measured at (the listed
    shapes, else one larger shape)."""
    decomposed = ep.run_decompositions({})
    graph, graph_weights, _ = import_graph(decomposed, symbolic=True, sizes=_symbol_sizes(decomposed, tensors))
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
    positions = _passed_positions([to_device(w, target, moved) for w in graph_weights], weights, num_inputs, extra)
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
    for node, tensor in zip(user_inputs(ep), tensors):
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
    start = time.perf_counter()
    try:
        package, specs, cached = compile_for_every_shape(decomposed, target, progress)
        summary["compile_s"] = round(time.perf_counter() - start, 3)
        summary["cached"] = cached
        compiled = load_every_shape(package)
        eager = decomposed.module()
        args, kwargs = structured
        with torch.no_grad():
            why = mismatch(pytree.tree_leaves(compiled(*args, **kwargs)), pytree.tree_leaves(eager(*args, **kwargs)),
                           "the program")
            if why:
                summary["error"] = why
                return None
            if measure:
                times = time_callables({"inductor": lambda: compiled(*args, **kwargs),
                                        "aten": lambda: eager(*args, **kwargs)}, target)
                summary["median_ms"] = {k: round(v, 4) for k, v in times.items()}
                if times["inductor"] >= times["aten"]:
                    return None
                for probe_args, probe_kwargs in probes:
                    times = time_callables({"inductor": lambda: compiled(*probe_args, **probe_kwargs),
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
    users = [values[v] for v, w in zip(graph["inputs"], graph["weights"]) if not w]
    run_graph = package_graph(package, specs, users, [values[v] for v in graph["outputs"]], target)
    return run_graph, torch.frombuffer(bytearray(package), dtype=torch.uint8)  # read on the CPU by the loader


def _passed_positions(needed: Sequence[torch.Tensor], weights: List[torch.Tensor], num_inputs: int,
                      extra: List[torch.Tensor]) -> List[int]:
    """Where each of `needed` is among the tensors ExecuteProgram passes (`weights`, the user's
    `num_inputs` tensors, then `extra`): a tensor passed already is found by storage, any other is
    appended to `extra` (once, however often it is needed)."""
    index_of = {storage_key(w): i for i, w in enumerate(weights)}
    for j, w in enumerate(extra):
        index_of.setdefault(storage_key(w), len(weights) + num_inputs + j)
    positions = []
    for w in needed:
        key = storage_key(w)
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


def dynamic_shapes_of(ep: ExportedProgram, module, args, kwargs):
    """The optimized program's dynamic_shapes: each user input's symbolic dims as `ep` has them (one
    torch.export.Dim per symbol, with its range)."""
    import sympy
    dims: Dict[Any, Any] = {}
    collection = torch.export.ShapesCollection()
    for node, tensor in zip(user_inputs(ep), pytree.tree_leaves((tuple(args), dict(kwargs)))):
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


__all__ = ["specialized", "shapes_of", "resized", "larger_shape", "with_plans_for_shapes",
           "with_graph_for_other_shapes", "dynamic_shapes_of"]
