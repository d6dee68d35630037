"""Cutting parts out of the exported program for the compilers (PartBuilder): each part as an FX graph
module with its weights as attributes, example tensors of its inputs, and what the compilers of one
optimize keep until it ends (their work under way, their per-optimize state)."""
import operator
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import torch
from torch.export import ExportedProgram

from ..program_format import DTYPES_BY_NAME

# A hook of module_of: the copy of an FX node of the part given the original, its new target or None.
Retarget = Callable[[torch.fx.Node, Dict[torch.fx.Node, torch.fx.Node]], Any]


class PartBuilder:
    """Cuts parts out of the decomposed exported program `ep`, whose AtenGraph is `graph`.

    `value_of` maps each FX node (by name) of `ep`'s graph to its AtenGraph value id; `weights` are
    the placeholders' tensors by FX name for parameters, buffers and constants."""

    def __init__(self, ep: ExportedProgram, graph: Dict[str, Any], value_of: Dict[str, Any],
                 weights: Dict[str, torch.Tensor], device: torch.device,
                 progress: Optional[Callable[[str], None]] = None):
        self.ep = ep
        self.graph = graph
        self.value_of = value_of
        self.weights = weights
        self.device = device
        self.fx_nodes = {n.name: n for n in ep.graph.nodes}
        self.progress = progress or (lambda message: None)
        self.cached = 0  # parts the compilers found in the disk cache
        self.weight_digests: Dict[Any, Any] = {}  # the weights' digests for the cache keys (digest.part_digest)
        self._pending: List[Any] = []  # compiles under way elsewhere (keep_until_close)
        self._states: Dict[str, Any] = {}  # each compiler's state for this optimize (state)
        # optimize's calibration inputs (each call's tensors, flat, on the device), which quantizing
        # compilers calibrate their parts on (calibration_examples), and its example inputs (the same way)
        self.calibration: List[List[torch.Tensor]] = []
        self.example: List[torch.Tensor] = []
        # what lowered candidates are judged by (option accuracy, a built-in's name, and option tolerance),
        # which a quantizing compiler may aim its whole graph at; None where the measure is the user's function
        self.aim: Optional[Tuple[str, float]] = None

    def state(self, owner: str, make: Callable[[], Any]) -> Any:
        """`owner`'s state for this optimize (made by `make` on first use); closed with the builder where
        it has a close()."""
        if owner not in self._states:
            self._states[owner] = make()
        return self._states[owner]

    def before_timing(self) -> None:
        """Stops what the compilers' states keep running in case it is needed (each state's before_timing:
        a quantizer's process started early), before candidates are timed: it would take the cores the
        timings measure."""
        for state in self._states.values():
            if hasattr(state, "before_timing"):
                state.before_timing()

    def keep_until_close(self, pending: Any) -> None:
        """`pending` (a compile under way elsewhere, with a close()) is closed with the builder: nothing is
        left running after an optimize."""
        self._pending.append(pending)

    def close(self) -> None:
        """Stops what the compilers left running (their errors are dropped: a candidate that needed the
        work raised them already) and drops their state."""
        for pending in self._pending:
            pending.close()
        self._pending = []
        for state in self._states.values():
            if hasattr(state, "close"):
                state.close()
        self._states = {}
        self.weight_digests = {}

    def module_of(self, part: Sequence[int], retarget: Optional[Retarget] = None):
        """The part as an fx.GraphModule: its weights as attributes (frozen into the package), its other
        inputs as placeholders; returns it with the value ids of its inputs and outputs. `retarget`: a
        compiler's hook that may give a copied node another target (Inductor's packed linears)."""
        names = [self.graph["nodes"][i]["name"] for i in part]
        members = [self.fx_nodes[name] for name in names]
        inside = set(members)
        for node in members:  # a tuple-returning operator's elements come with it
            if isinstance(self.value_of.get(node.name), tuple):
                inside.update(u for u in node.users if u.target is operator.getitem)
        graph = torch.fx.Graph()
        module = torch.nn.Module()
        env: Dict[torch.fx.Node, torch.fx.Node] = {}
        input_ids: List[int] = []

        def outside(node: torch.fx.Node) -> torch.fx.Node:
            if node not in env:
                if node.name in self.weights:
                    attr = f"w{len(env)}"
                    module.register_buffer(attr, self.weights[node.name].to(self.device))
                    env[node] = graph.get_attr(attr)
                else:
                    env[node] = graph.placeholder(f"in{len(input_ids)}")
                    input_ids.append(self.value_of[node.name])
                env[node].meta = dict(node.meta)
            return env[node]

        ordered = [n for n in self.ep.graph.nodes if n in inside]
        for node in ordered:
            for source in node.all_input_nodes:
                if source not in inside:
                    outside(source)
            env[node] = graph.node_copy(node, lambda n: env[n])
            target = retarget(node, env) if retarget is not None else None
            if target is not None:
                env[node].target = target
        returned = [n for n in ordered if isinstance(self.value_of.get(n.name), int)
                    and any(u not in inside for u in n.users)]  # read after the part, or returned
        graph.output(tuple(env[n] for n in returned))
        return torch.fx.GraphModule(module, graph), input_ids, [self.value_of[n.name] for n in returned]

    def examples(self, input_ids: Sequence[int]) -> Tuple[torch.Tensor, ...]:
        """Example tensors of the part's inputs (their recorded shapes, strides and dtypes)."""
        return tuple(example_of(self.graph["values"][v], self.device) for v in input_ids)

    def calibration_examples(self, input_ids: Sequence[int]) -> List[Tuple[torch.Tensor, ...]]:
        """The part's inputs (`input_ids`, as module_of gives them) on each calibration input (inputs_at),
        kept until the builder closes: every quantizing compiler of the whole graph reads the same."""
        return self.calibration_examples_of([input_ids])[0]

    def calibration_examples_of(self, inputs: Sequence[Sequence[int]]) -> List[List[Tuple[torch.Tensor, ...]]]:
        """calibration_examples of several parts (the input ids of each), those not read before read in one
        run of the graph per calibration input (a lowering by parts quantizes every part)."""
        made = self.state("calibration_examples", dict)
        missing = list(dict.fromkeys(tuple(ids) for ids in inputs if tuple(ids) not in made))
        if missing:
            union = sorted(set().union(*missing))
            at = {v: k for k, v in enumerate(union)}
            read = self.inputs_at(self.calibration, union)
            for ids in missing:
                made[ids] = [tuple(call[at[v]] for v in ids) for call in read]
        return [made[tuple(ids)] for ids in inputs]

    def inputs_at(self, calls: Sequence[Sequence[torch.Tensor]], input_ids: Sequence[int]) -> List[Tuple[torch.Tensor, ...]]:
        """The part's inputs (`input_ids`, as module_of gives them) on each of `calls` (the program's inputs,
        flat, as the example's): the values the program's graph computes there, read by running it
        (torch.fx.Interpreter, its weights as the builder holds them) once per call."""
        ids = set(input_ids)
        wanted = {v: name for name, v in self.value_of.items() if isinstance(v, int) and v in ids}
        seen: Dict[str, Any] = {}

        class Recorder(torch.fx.Interpreter):
            def run_node(self, node: torch.fx.Node) -> Any:
                value = super().run_node(node)
                if node.name in names:
                    seen[node.name] = value
                return value

        names = set(wanted.values())
        out = []
        for inputs in calls:
            users = iter(inputs)
            args = [self.weights[n.name].to(self.device) if n.name in self.weights else next(users)
                    for n in self.ep.graph.nodes if n.op == "placeholder"]
            seen.clear()
            with torch.no_grad():
                Recorder(self.ep.graph_module).run(*args)
            out.append(tuple(seen[wanted[v]] for v in input_ids))
        return out


def example_of(info: Dict[str, Any], device: torch.device) -> torch.Tensor:
    """A tensor of a value's recorded shape, strides and dtype: random floats, zero integers."""
    dtype = DTYPES_BY_NAME[info["dtype"]]
    t = torch.empty_strided(info["shape"], info["stride"], dtype=dtype, device=device)
    if dtype.is_floating_point:
        t.normal_()
    else:
        t.zero_()
    return t


__all__ = ["PartBuilder", "Retarget", "example_of"]
