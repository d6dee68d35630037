"""The export path: a torch.export ExportedProgram in, an optimized ExportedProgram out.

The program's ATen graph is read straight from its FX graph (aten_import.py) into autograph's AtenGraph
JSON; the C++ side plans it (search, on-board verification) and returns the program as text; compiled
candidates compete with it (contest.py). The optimized ExportedProgram's graph is one call of
``autograph::execute(Tensor[] inputs, str program)`` on the original's weights and the user's inputs
(runtime.py); it saves with ``torch.export.save`` and loads with ``torch.export.load`` once
``autograph`` is imported (which registers the op and its fake kernel)."""
from typing import Any, Dict, List, Optional, Sequence, Tuple

import torch
from torch.export import ExportedProgram
from torch.utils import _pytree as pytree

from .._library import load_library
from ..errors import InputError, UnsupportedModelError
from .aten_import import TORCHSCRIPT_HINT, functional, has_dynamic_shapes, import_graph, to_device
from .candidates import other_graphs
from .contest import plan_and_compile
from .packed_weights import packed
from . import plans
from .rewrites import fold_batchnorm, fold_weight_scalars
from .runtime import ExecuteProgram, register_fake
from .shapes import (dynamic_shapes_of, larger_shape, resized, shapes_of, specialized, with_graph_for_other_shapes,
                     with_plans_for_shapes)


def optimize_exported(ep: ExportedProgram, *, method: str, device: Optional[str], options: Dict[str, Any],
                      example_inputs: Optional[Sequence[Any]] = None,
                      example_kwargs: Optional[Dict[str, Any]] = None,
                      calibration: Sequence[List[torch.Tensor]] = ()) -> Tuple[ExportedProgram, Dict[str, Any]]:
    """Plans `ep` and returns the optimized ExportedProgram and the report (the keys of optimize --json).
    `calibration`: calibration.calibration_sets of the user's calibration inputs."""
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
        raise UnsupportedModelError("the export path takes tensor inputs only" + TORCHSCRIPT_HINT)
    # The optimized program holds the weights as its own buffers (frozen), so BatchNorm folds into the
    # convolutions first; from here on every use of `ep` (the plan, each compiled candidate, the graph
    # and plans for other shapes) reads the folded program, the numbers it computes from its weights alone
    # computed already. The caller's program stays as it was.
    ep = fold_batchnorm(fold_weight_scalars(ep))
    dynamic = has_dynamic_shapes(ep)
    options = dict(options)
    shapes = shapes_of(options.pop("shapes", None), tensors)
    if shapes and not dynamic:
        raise InputError("shapes: this exported program has static shapes and runs at those alone; export it with "
                         "dynamic_shapes (torch.export.Dim) whose ranges hold the shapes to plan for")
    # A program with dynamic shapes is planned at the example's shapes (exported again with them) and
    # keeps its own graph, sizes computed, for the other shapes.
    planned = specialized(ep, example_inputs, example_kwargs) if dynamic else ep
    decomposed = functional(planned) or planned.run_decompositions({})
    graph, weights, imported = import_graph(decomposed)
    target = torch.device(device) if device is not None else (tensors[0].device if tensors else torch.device("cpu"))
    moved: Dict[Any, torch.Tensor] = {}
    weights = [to_device(w, target, moved) for w in weights]
    tensors = [t.to(target) for t in tensors]
    settings = plans.resolved(options, method, target)
    others = other_graphs(decomposed, target, moved, settings)
    checks = [[t.to(target) for t in inputs] for inputs in calibration]
    program, weights, report, measure, compile_parts = plan_and_compile(decomposed, graph, imported, weights,
                                                                        tensors, settings, others, checks)
    extra: List[torch.Tensor] = []
    if dynamic:
        structured = pytree.tree_unflatten(tensors, in_spec)
        probe_shapes = shapes or larger_shape(ep, tensors)
        probes = [pytree.tree_unflatten([resized(t, s) for t, s in zip(tensors, shape)], in_spec)
                  for shape in probe_shapes]
        program, extra, other = with_graph_for_other_shapes(ep, program, weights, tensors, structured, target, moved,
                                                            compile_parts=compile_parts, measure=measure, probes=probes)
        report["dynamic_shapes"] = dict(planned_for=[list(t.shape) for t in tensors], **other)
    if shapes:
        program, report["shape_plans"] = with_plans_for_shapes(ep, program, weights, tensors, extra, in_spec, shapes,
                                                               target, moved, settings)
    program, passed = packed(program, weights)
    module = ExecuteProgram(program, passed, in_spec, ep.call_spec.out_spec, extra)
    placed = tuple(t.to(target) if isinstance(t, torch.Tensor) else t for t in example_inputs)
    placed_kwargs = {k: (v.to(target) if isinstance(v, torch.Tensor) else v) for k, v in example_kwargs.items()}
    shapes = dynamic_shapes_of(ep, module, placed, placed_kwargs) if dynamic else None
    try:
        optimized = torch.export.export(module, placed, placed_kwargs, dynamic_shapes=shapes, strict=False)
    except Exception as e:  # noqa: BLE001 - what export says is the message
        raise UnsupportedModelError(f"exporting the optimized program failed: {str(e).splitlines()[0]}") from e
    return optimized, report


__all__ = ["optimize_exported"]
