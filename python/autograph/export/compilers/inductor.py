"""Kernels by Inductor inside autograph's plan (the export path).

The plan autograph kept for an exported program is cut into parts — a serial segment (a run of stages
with one group each) or one group of a concurrent stage — and each part is compiled by AOTInductor
(C++/OpenMP on CPU, Triton on CUDA) with its weights frozen into the package, as Inductor's freezing
does (constant folding, conv + batch-norm folding, prepacked oneDNN weights). In the program the part
becomes one ``autograph::run_inductor_part`` call on the part's inputs and its package, which travels
as a uint8 tensor among the program's weights; the executor runs it on its threads / streams like any
operator. The search then plans over the parts (their FLOPs and kind stand for them).

Two candidates are built: the whole graph as one part (Inductor's own plan) and, when the kept plan
runs groups side by side, the plan's parts; when a weight feeds several compute-bound operators, the
whole graph is compiled without freezing too (freezing packs a weight once per use). Each is timed against the program on ATen's kernels, side
by side on the device, and the fastest is kept (never slower). Where OpenVINO's candidate competes
(CPU), the whole graph is first compiled just in time (compile_fx, `compile_just_in_time`) and packaged
only when that measures fastest (export._packaged_winner). Packages are cached on disk
(export/cache.py), keyed by the part's graph and weights, the machine, the versions and Inductor's
configuration (autograph's settings and the user's).
"""
import concurrent.futures
import hashlib
import json
import operator
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple, Union

import torch
from torch.export import ExportedProgram

from .. import cache as part_cache
from ..lowered_graph import DTYPES as LOWERED_DTYPES
from ..program_format import DTYPE_NAMES, DTYPES_BY_NAME
from .base import CompiledPart, every_node, part_digest, whole_graph_part
from .toolchain import aoti_configs, compile_graph_module, compile_package, vec_isa_checks_remembered
from .lowered_module import lowered_module

PART_OP = "autograph::run_inductor_part"
_FORMAT = "autograph-inductor-part"
# A plan cut into more parts than this is compiled as the whole graph only (each part costs a compile).
MAX_PARTS = 8


cache_dir = part_cache.cache_dir
_SUFFIX = ".pt2"


def inductor_compiler(configs: Dict[str, Any]) -> Dict[str, Any]:
    """What an Inductor package depends on besides its graph: autograph's settings (`configs`) and the
    rest of the user's Inductor configuration, which the compile reads too."""
    user = torch._inductor.config.save_config_portable()
    user.pop("aot_inductor.metadata", None)  # AOTInductor fills it in place as it packages (the machine's)
    user = json.dumps(user, sort_keys=True, default=str)
    return {"inductor": configs, "user_config": hashlib.sha256(user.encode()).hexdigest()}


def parts_of_plan(body: Dict[str, Any]) -> List[List[int]]:
    """The kept plan's parts as lists of AtenGraph node indices (each in execution order): a run of
    stages with one group each (or merged into one kernel) is one part; each group of a concurrent
    stage with several is one part."""
    operators = body["operators"]
    parts: List[List[int]] = []
    run: List[int] = []
    for stage in body["schedule"]["stages"]:
        groups = [[n for op in group for n in operators[op]["nodes"]] for group in stage["groups"]]
        if len(groups) == 1 or stage.get("strategy") == "merge":
            run.extend(n for group in groups for n in group)
            continue
        if run:
            parts.append(run)
            run = []
        parts.extend(groups)
    if run:
        parts.append(run)
    return parts


def shares_weights(graph: Dict[str, Any], body: Dict[str, Any], packed_at_run_time: Sequence[int] = ()) -> bool:
    """Whether a weight feeds several compute-bound operators (an unrolled RNN's steps): Inductor's
    freezing packs a weight once per use, so such graphs are also compiled without it. The nodes in
    `packed_at_run_time` (PartBuilder.packs_linear_at_run_time: linears whose weight autograph packs
    once when the package first runs) do not count: freezing leaves their weights as they are (rnntc_sru
    runs as fast frozen as unfrozen)."""
    skip = set(packed_at_run_time)
    compute = {n for op in body["operators"] if op["kind"] == "compute" for n in op["nodes"]} - skip
    weights = {v for v, w in zip(graph["inputs"], graph["weights"]) if w}
    uses: Dict[int, int] = {}
    for i in compute:
        for v in set(values_read(graph["nodes"][i])) & weights:
            uses[v] = uses.get(v, 0) + 1
    return any(n > 1 for n in uses.values())


def part_costs(body: Dict[str, Any], part: Sequence[int]) -> Tuple[float, bool]:
    """The FLOPs of a part's operators and whether any of them is compute-bound."""
    members = set(part)
    ops = [op for op in body["operators"] if op["anchor"] in members]
    return sum(op.get("flops", 0.0) for op in ops), any(op["kind"] == "compute" for op in ops)


class PartBuilder:
    """Cuts parts out of the decomposed exported program and compiles them.

    `value_of` maps each FX node (by name) of `ep`'s graph to its AtenGraph value id; `weights` are
    the placeholders' tensors by FX name for parameters, buffers and constants."""

    def __init__(self, ep: ExportedProgram, graph: Dict[str, Any], value_of: Dict[str, int],
                 weights: Dict[str, torch.Tensor], device: torch.device,
                 progress: Optional[Callable[[str], None]] = None):
        self.ep = ep
        self.graph = graph
        self.value_of = value_of
        self.weights = weights
        self.device = device
        self.fx_nodes = {n.name: n for n in ep.graph.nodes}
        self.progress = progress or (lambda message: None)
        self.cached = 0  # parts found in the disk cache
        # Parts compiling on a background thread (compile_in_background), by node set and freezing.
        self._pending: Dict[Tuple[frozenset, bool, str], concurrent.futures.Future] = {}
        self._thread: Optional[concurrent.futures.ThreadPoolExecutor] = None
        self._converting: List[Any] = []  # compiles under way elsewhere (keep_until_close)
        self._paths: Dict[Tuple[frozenset, bool, str], Tuple[Any, List[int], List[int], str]] = {}  # _package_path
        self.weight_digests: Dict[Any, Any] = {}  # the weights' digests for the cache keys (part_digest)

    def compile_in_background(self, part: Sequence[int], label: str, freezing: bool = True,
                              precision: str = "fp32") -> None:
        """Starts compiling `part` on a background thread; a later `compile` of the same nodes waits
        for it. The search's C++ releases the GIL, as do Inductor's compiler runs, so a part known
        before planning (the whole graph) compiles while the search runs."""
        if self._thread is None:
            self._thread = concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="autograph-inductor")
        key = self._pending_key(part, freezing, precision)
        if key not in self._pending:
            self._pending[key] = self._thread.submit(self._compile_now, list(part), label, freezing, precision)

    def _pending_key(self, part: Sequence[int], freezing: bool, precision: str = "fp32") -> Tuple[frozenset, bool, str]:
        # A part's getitems come with their operator whether listed or not (module_of): the same module.
        nodes = self.graph["nodes"]
        return frozenset(i for i in part if nodes[i]["op"] != "getitem"), freezing, precision

    def close(self) -> None:
        """Waits for background compiles (their errors are dropped: a candidate that needs one raised
        it from `compile`), stops the thread and any OpenVINO conversion still running."""
        for pending in self._converting:
            pending.close()
        self._converting = []
        self.weight_digests = {}
        if self._thread is not None:
            self._thread.shutdown(wait=True)
            self._thread = None

    def closed(self, parts: List[List[int]]) -> List[List[int]]:
        """`parts` with each list a part's operator returns (split, unbind) read element by element
        inside that part (its getitem nodes move there), so only tensors cross a part's boundary, and
        without parts that launch nothing (views alone)."""
        nodes = self.graph["nodes"]
        values = self.graph["values"]
        getitems: Dict[int, List[int]] = {}
        for i, node in enumerate(nodes):
            if node["op"] == "getitem":
                getitems.setdefault(node["args"][0]["value"], []).append(i)
        moved = {}
        for k, part in enumerate(parts):
            for i in part:
                for v in nodes[i]["outputs"]:
                    if not values[v]["tensor"]:
                        moved.update((g, k) for g in getitems.get(v, []))
        result = []
        for k, part in enumerate(parts):
            members = [i for i in part if moved.get(i, k) == k] + [g for g, owner in moved.items() if owner == k and g not in part]
            if any(nodes[i]["op"] != "getitem" and not _is_view(nodes[i]) for i in members):
                result.append(sorted(members))
        return result

    def module_of(self, part: Sequence[int], pack_linear: bool = True, precision: str = "fp32"):
        """The part as an fx.GraphModule: its weights as attributes (frozen into the package), its
        other inputs as placeholders; returns it with the value ids of its inputs and outputs.
        `pack_linear`: linears may become autograph::packed_linear (for Inductor; other compilers
        know only ATen's operators; a float32 weight's alone). `precision` below fp32: its matmuls and
        convolutions compute in it (lowered_module)."""
        if precision != "fp32":
            gm, input_ids, output_ids = self.module_of(part, pack_linear=False)
            return lowered_module(gm, precision), input_ids, output_ids
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
            if pack_linear and self._packs_linear(node, env):
                env[node].target = torch.ops.autograph.packed_linear.default
        returned = [n for n in ordered if isinstance(self.value_of.get(n.name), int)
                    and any(u not in inside for u in n.users)]  # read after the part, or returned
        graph.output(tuple(env[n] for n in returned))
        return torch.fx.GraphModule(module, graph), input_ids, [self.value_of[n.name] for n in returned]

    def _packs_linear(self, node: torch.fx.Node, env: Dict[torch.fx.Node, torch.fx.Node]) -> bool:
        """Whether a linear of the part runs as autograph::packed_linear: packs_linear_at_run_time, its
        weight an attribute of the part's module."""
        return self._packable_linear(node) and env[node.args[1]].op == "get_attr"

    def _packable_linear(self, node: Optional[torch.fx.Node]) -> bool:
        """On CPU with MKL, a linear whose weight is a float32 matrix of the program: its weight packed
        when the package first runs, for MKL's GEMM or oneDNN's, whichever measures faster there
        (csrc/ops/register_packed_linear.cpp). Inductor's just-in-time freezing packs for MKL; its
        ahead-of-time compile cannot pack (a packed matrix cannot be saved) and uses oneDNN's linear."""
        if node is None or node.target is not torch.ops.aten.linear.default or self.device.type != "cpu" \
                or not torch._C.has_mkl:
            return False
        weight = node.args[1] if len(node.args) > 1 else None
        if not isinstance(weight, torch.fx.Node) or weight.name not in self.weights:
            return False
        w = self.weights[weight.name]
        return w.dtype == torch.float32 and w.dim() == 2 and not node.kwargs

    def packs_linear_at_run_time(self) -> List[int]:
        """The AtenGraph nodes (indices) that Inductor's parts run as autograph::packed_linear."""
        return [i for i, node in enumerate(self.graph["nodes"]) if self._packable_linear(self.fx_nodes.get(node["name"]))]

    def examples(self, input_ids: Sequence[int]) -> Tuple[torch.Tensor, ...]:
        """Example tensors of the part's inputs (their recorded shapes, strides and dtypes)."""
        return tuple(_example(self.graph["values"][v], self.device) for v in input_ids)

    def keep_until_close(self, pending: Any) -> None:
        """`pending` (a compile under way elsewhere: openvino.start) is closed with the builder: nothing
        is left running after an optimize."""
        self._converting.append(pending)

    def compile(self, part: Sequence[int], label: str, freezing: bool = True,
                precision: str = "fp32") -> Tuple[bytes, List[int], List[int]]:
        """The part's AOTInductor package (from the disk cache when there, or from the background
        compile of the same nodes) and its input / output ids. `precision`: as module_of's."""
        pending = self._pending.get(self._pending_key(part, freezing, precision))
        if pending is not None:
            return pending.result()
        return self._compile_now(part, label, freezing, precision)

    def is_cached(self, part: Sequence[int], freezing: bool = True, precision: str = "fp32") -> bool:
        """Whether the part's AOTInductor package is in the disk cache (compile then only reads it)."""
        return part_cache.contains(self._package_path(part, freezing, precision)[3], _SUFFIX)

    def compile_just_in_time(self, part: Sequence[int], label: str, freezing: bool = True,
                             precision: str = "fp32") -> Tuple[Callable[..., Any], List[int], List[int]]:
        """The part compiled by Inductor just in time (compile_fx, as torch.compile does after tracing;
        weights frozen with `freezing`): a callable on the part's input tensors, with its input / output
        ids. The same graph and settings as `compile`'s package, so the same kernels, without the
        ahead-of-time wrapper's C++ build, the link of its weights and the packaging, which make a package
        far slower to build (bench/results/export-path-2026-11-26e-cpu); what is timed to decide whether
        the package is worth making. `precision`: as module_of's."""
        from torch._inductor.compile_fx import compile_fx
        gm, input_ids, output_ids = self.module_of(part, precision=precision)
        self.progress(f"compiling {label} with Inductor just in time ({len(part)} operators)")
        with torch.no_grad(), torch._inductor.config.patch(freezing=freezing), vec_isa_checks_remembered():
            compiled = compile_fx(gm, list(self.examples(input_ids)))
        return compiled, input_ids, output_ids

    def _package_path(self, part: Sequence[int], freezing: bool, precision: str = "fp32"):
        """The part's module, its input / output ids, and where its package is cached (remembered: the key
        hashes every weight of the part)."""
        key = self._pending_key(part, freezing, precision)
        if key not in self._paths:
            gm, input_ids, output_ids = self.module_of(part, precision=precision)
            configs = aoti_configs(freezing=freezing)
            content = part_digest(gm, self.examples(input_ids), self.device, configs, self.weight_digests)
            entry = part_cache.key("aoti-part", self.device, inductor_compiler(configs), content)
            self._paths[key] = (gm, input_ids, output_ids, entry)
        return self._paths[key]

    def _compile_now(self, part: Sequence[int], label: str, freezing: bool,
                     precision: str = "fp32") -> Tuple[bytes, List[int], List[int]]:
        gm, input_ids, output_ids, entry = self._package_path(part, freezing, precision)
        self._paths.pop(self._pending_key(part, freezing, precision), None)  # compiled once: the module is not kept
        package = part_cache.read(entry, _SUFFIX)
        self.cached += package is not None
        if package is None:
            self.progress(f"compiling {label} with Inductor ({len(part)} operators)")
            with part_cache.writing(entry, _SUFFIX) as partial, torch.no_grad():
                compile_graph_module(gm, self.examples(input_ids), partial, aoti_configs(freezing=freezing))
            package = part_cache.commit(partial, entry, _SUFFIX)
        return package, input_ids, output_ids


def compile_for_every_shape(ep: torch.export.ExportedProgram, device: torch.device,
                            progress: Callable[[str], None]) -> Tuple[bytes, List[Dict[str, Any]], bool]:
    """One AOTInductor package of a whole program with dynamic shapes (weights frozen), for every shape
    in its range; the outputs' spec (-1 where a size is symbolic) and whether it came from the disk cache."""
    configs = aoti_configs()
    h = hashlib.sha256()
    h.update(str(ep.graph).encode())
    h.update(str(sorted((str(k), str(v)) for k, v in ep.range_constraints.items())).encode())
    for name, t in sorted(list(ep.state_dict.items()) + list(ep.constants.items()), key=lambda kv: kv[0]):
        if isinstance(t, torch.Tensor):
            h.update(f"{name}{tuple(t.shape)}{t.stride()}{t.dtype}".encode())
            h.update(t.detach().cpu().contiguous().view(torch.uint8).numpy().tobytes() if t.numel() else b"")
    entry = part_cache.key("aoti-every-shape", device, inductor_compiler(configs), h.hexdigest())
    package = part_cache.read(entry, _SUFFIX)
    cached = package is not None
    if not cached:
        progress("compiling the program for every shape in its range with Inductor")
        with part_cache.writing(entry, _SUFFIX) as partial, torch.no_grad():
            compile_package(ep, partial, configs)
        package = part_cache.commit(partial, entry, _SUFFIX)
    (output,) = [n for n in ep.graph.nodes if n.op == "output"]
    specs = []
    for r in output.args[0]:
        val = r.meta["val"]
        specs.append({"shape": [d if isinstance(d, int) else -1 for d in val.shape],
                      "stride": [d if isinstance(d, int) else -1 for d in val.stride()],
                      "dtype": DTYPE_NAMES[val.dtype]})
    return package, specs, cached


def package_graph(package: bytes, specs: List[Dict[str, Any]], input_values: List[Dict[str, Any]],
                  output_values: List[Dict[str, Any]], device: torch.device) -> Dict[str, Any]:
    """The AtenGraph that runs one package on the user's inputs: inputs [package, user's tensors...],
    one run_inductor_part node, its outputs by getitem."""
    spec = {"format": _FORMAT, "digest": part_cache.sha256_of(package), "device": str(device),
            "outputs": specs, "flops": 0.0, "compute_bound": True}
    values = [{"tensor": True, "shape": [len(package)], "stride": [1], "dtype": "Byte"}] + list(input_values)
    user = list(range(1, len(values)))
    values.append({"tensor": False})
    listed = len(values) - 1
    outputs = list(range(len(values), len(values) + len(output_values)))
    values += list(output_values)
    nodes = [{"op": PART_OP, "overload": "default", "name": "every_shape", "args": [{"values": user}, {"value": 0},
              {"str": json.dumps(spec)}], "kwargs": {}, "outputs": [listed]}]
    nodes += [{"op": "getitem", "overload": "default", "name": f"every_shape_{j}", "args": [{"value": listed}, j],
               "kwargs": {}, "outputs": [v]} for j, v in enumerate(outputs)]
    return {"version": 1, "values": values, "inputs": [0] + user, "weights": [True] + [False] * len(user),
            "nodes": nodes, "outputs": outputs}


def rewrite_with_parts(graph: Dict[str, Any], weight_tensors: List[torch.Tensor], body: Dict[str, Any],
                       parts: List[List[int]], compiled: List[Tuple[bytes, List[int], List[int]]],
                       device: torch.device, op: str = PART_OP, fmt: str = _FORMAT,
                       precision: Union[str, Sequence[str]] = "fp32") -> Tuple[Dict[str, Any], List[torch.Tensor]]:
    """`graph` with each part replaced by one call of `op` (run_inductor_part, or run_openvino_part with
    its `fmt`; the package a new weight input) and the weights no node reads any more dropped; returns
    the new graph and its weight tensors. `precision` (one for every part, or one per part) other than
    fp32 goes in the part's spec (the runner computes the part in it)."""
    precisions = [precision] * len(parts) if isinstance(precision, str) else list(precision)
    values = [dict(v) for v in graph["values"]]
    in_part = {n: k for k, part in enumerate(parts) for n in part}
    replaced: List[Tuple[float, List[Dict[str, Any]]]] = []  # (position, nodes)
    packages: List[Tuple[int, torch.Tensor]] = []  # (value id, bytes)
    for i, node in enumerate(graph["nodes"]):
        if i not in in_part:
            replaced.append((i, [node]))
    for k, (part, (package, input_ids, output_ids)) in enumerate(zip(parts, compiled)):
        flops, compute_bound = part_costs(body, part)
        spec = {"format": fmt, "digest": part_cache.sha256_of(package), "device": str(device),
                "outputs": [{key: values[v][key] for key in ("shape", "stride", "dtype")} for v in output_ids],
                "flops": flops, "compute_bound": compute_bound}
        if precisions[k] != "fp32":  # the runner compiles the package to compute in it
            spec["precision"] = precisions[k]
        values.append({"tensor": True, "shape": [len(package)], "stride": [1], "dtype": "Byte"})
        package_id = len(values) - 1
        packages.append((package_id, torch.frombuffer(bytearray(package), dtype=torch.uint8)))
        values.append({"tensor": False})
        list_id = len(values) - 1
        nodes = [{"op": op, "overload": "default", "name": f"{op.split('::run_')[-1]}_{k}",
                  "args": [{"values": input_ids}, {"value": package_id}, {"str": json.dumps(spec)}],
                  "kwargs": {}, "outputs": [list_id]}]
        nodes += [{"op": "getitem", "overload": "default", "name": f"{op.split('::run_')[-1]}_{k}_{j}",
                   "args": [{"value": list_id}, j], "kwargs": {}, "outputs": [v]} for j, v in enumerate(output_ids)]
        replaced.append((min(part), nodes))
    ordered = _topological([n for _, group in sorted(replaced, key=lambda r: r[0]) for n in group])

    read = set(graph["outputs"])
    for node in ordered:
        read.update(values_read(node))
    inputs, flags, tensors = [], [], []
    weights = iter(weight_tensors)
    for v, is_weight in zip(graph["inputs"], graph["weights"]):
        tensor = next(weights) if is_weight else None
        if is_weight and v not in read:
            continue  # frozen into a package
        if not is_weight and packages:  # packages go after the last weight, before the user's inputs
            for package_id, package in packages:
                inputs.append(package_id)
                flags.append(True)
                tensors.append(package)
            packages = []
        inputs.append(v)
        flags.append(is_weight)
        if is_weight:
            tensors.append(tensor)
    rewritten = dict(graph, values=values, inputs=inputs, weights=flags, nodes=ordered)
    return rewritten, tensors


def _is_view(node: Dict[str, Any]) -> bool:
    op = getattr(getattr(torch.ops, node["op"].split("::")[0]), node["op"].split("::")[1])
    schema = getattr(op, node["overload"])._schema
    return bool(schema.returns) and all(r.alias_info is not None and not r.alias_info.is_write for r in schema.returns)


def values_read(node: Dict[str, Any]) -> List[int]:
    """The value ids an AtenGraph node reads (its arguments' values and value lists)."""
    ids = []
    for a in list(node["args"]) + list(node["kwargs"].values()):
        if isinstance(a, dict) and "value" in a:
            ids.append(a["value"])
        elif isinstance(a, dict) and "values" in a:
            ids.extend(v for v in a["values"] if v is not None)
    return ids


def _topological(nodes: List[Dict[str, Any]]) -> List[Dict[str, Any]]:
    """`nodes` in an order where each value is defined before it is read, as close to the given one as
    that allows (a part's node may read values that nodes listed after its first member define)."""
    producer = {v: i for i, n in enumerate(nodes) for v in n["outputs"]}
    done, order = set(), []

    def visit(i: int) -> None:
        stack = [(i, False)]
        while stack:
            j, expanded = stack.pop()
            if j in done:
                continue
            if expanded:
                done.add(j)
                order.append(nodes[j])
                continue
            stack.append((j, True))
            stack.extend((producer[v], False) for v in reversed(values_read(nodes[j])) if v in producer and producer[v] not in done)

    for i in range(len(nodes)):
        visit(i)
    return order


def _example(info: Dict[str, Any], device: torch.device) -> torch.Tensor:
    dtype = DTYPES_BY_NAME[info["dtype"]]
    t = torch.empty_strided(info["shape"], info["stride"], dtype=dtype, device=device)
    if dtype.is_floating_point:
        t.normal_()
    else:
        t.zero_()
    return t


def _cpu_has_bf16() -> bool:
    """Whether this CPU has bfloat16 instructions (AVX-512 BF16 or AMX), which oneDNN's kernels use."""
    return bool(torch.backends.mkldnn.is_available() and torch.ops.mkldnn._is_mkldnn_bf16_supported())


class InductorCompiler:
    """Inductor's candidates (compilers/base.Compiler): "whole" (the graph as one part), "plan" (the
    plan's parts, where it runs groups side by side and was verified), "whole_unfrozen" (the whole graph
    without freezing, where a weight feeds several compute-bound operators: shares_weights)."""
    name = "Inductor"
    option = "inductor"
    part_call: Dict[str, str] = {}  # the default: run_inductor_part
    # Each part lowered is one more compile (lowered_module): not worth a graph cut into parts for it.
    lowers_by_parts = False

    def missing(self) -> Optional[str]:
        return None  # part of torch

    def offers(self, builder: "PartBuilder", graph: Dict[str, Any], body: Dict[str, Any], settings: Dict[str, Any],
               plan_unverified: bool) -> Dict[str, List[List[int]]]:
        cuts = {"whole": whole_graph_part(body)}
        plan_parts = builder.closed(parts_of_plan(body))
        # Not from a plan that is to be verified later: its concurrency is the analytical model's guess.
        # resnext50's unverified plan had several parts, each a long compile, and ran no faster than the
        # whole graph's; the verified plan left no parts to compile.
        if 1 < len(plan_parts) <= MAX_PARTS and not plan_unverified:
            cuts["plan"] = plan_parts
        if shares_weights(graph, body, builder.packs_linear_at_run_time()):
            cuts["whole_unfrozen"] = cuts["whole"]
        return cuts

    def lowered(self, device: torch.device, precision: str, candidate: str) -> List[str]:
        # The whole graph's package once more, its matmuls and convolutions lowered (lowered_module): bf16
        # on CUDA and on a CPU with bf16 instructions (elsewhere oneDNN emulates it, slower), fp16 on CUDA.
        if candidate != "whole" or precision not in LOWERED_DTYPES:
            return []
        if device.type == "cuda" or (precision == "bf16" and device.type == "cpu" and _cpu_has_bf16()):
            return [precision]
        return []

    def lower(self, builder: "PartBuilder", name: str, parts: List[List[int]], labels: List[str],
              compiled: List[CompiledPart], precision: str) -> List[CompiledPart]:
        return [builder.compile(p, label, freezing=name != "whole_unfrozen", precision=precision)
                for p, label in zip(parts, labels)]

    def start(self, builder: "PartBuilder", name: str, parts: List[List[int]],
              labels: List[str]) -> Callable[[], List[CompiledPart]]:
        # In this process: compiled when waited for (a part compiling in the background is waited for).
        return lambda: [builder.compile(p, label, freezing=name != "whole_unfrozen") for p, label in zip(parts, labels)]


COMPILER = InductorCompiler()


__all__ = ["COMPILER", "InductorCompiler", "values_read", "parts_of_plan", "whole_graph_part", "every_node",
           "PartBuilder", "rewrite_with_parts", "cache_dir", "MAX_PARTS", "compile_for_every_shape", "package_graph"]
