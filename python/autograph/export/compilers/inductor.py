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
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import torch

from ...errors import Error
from ...settings import Settings
from .. import cache as part_cache
from ..candidate import JustInTime
from ..lowered_graph import DTYPES as LOWERED_DTYPES
from ..parts import NOT_PROFILED, CompiledPart, NodeTimes, PartBuilder, closed, every_node, part_digest, parts_of_plan, values_read, \
    whole_graph_part, without_ops
from ..program_format import DTYPE_NAMES
from .cpu_features import cpu_has_bf16
from .toolchain import (aoti_configs, compile_graph_module, compile_package, fake_tensor_errors_quiet,
                        vec_isa_checks_remembered)
from .lowered_module import lowered_module

PART_OP = "autograph::run_inductor_part"
_FORMAT = "autograph-inductor-part"
# A plan cut into more parts than this is compiled as the whole graph only (each part costs a compile).
MAX_PARTS = 8
# Recurrent layers stay on ATen's kernels between Inductor's parts: Inductor unrolls them step by step, so
# its compile grows with the sequence (gru_speech's 200 frames: 290 s) and its unrolled steps ran 2.3x
# slower than ATen's fused layer (bench/results/export-path-2026-11-28-cpu); torch.compile leaves them
# to eager by default too (torch._dynamo.config.allow_rnn).
RECURRENT_OPS = frozenset({"aten::gru", "aten::lstm", "aten::rnn_tanh", "aten::rnn_relu"})


cache_dir = part_cache.cache_dir
_SUFFIX = ".pt2"


def inductor_compiler(configs: Dict[str, Any]) -> Dict[str, Any]:
    """What an Inductor package depends on besides its graph: autograph's settings (`configs`) and the
    rest of the user's Inductor configuration, which the compile reads too."""
    user = torch._inductor.config.save_config_portable()
    user.pop("aot_inductor.metadata", None)  # AOTInductor fills it in place as it packages (the machine's)
    user = json.dumps(user, sort_keys=True, default=str)
    return {"inductor": configs, "user_config": hashlib.sha256(user.encode()).hexdigest()}


def shares_weights(graph: Dict[str, Any], body: Dict[str, Any], packed_at_run_time: Sequence[int] = ()) -> bool:
    """Whether a weight feeds several compute-bound operators (an unrolled RNN's steps): Inductor's
    freezing packs a weight once per use, so such graphs are also compiled without it. The nodes in
    `packed_at_run_time` (packs_linear_at_run_time: linears whose weight autograph packs
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


class _Work:
    """Inductor's work in one optimize (the builder's state "inductor"): parts compiling on a background
    thread (compile_in_background), by node set, freezing and precision, and each part's module and cache
    entry, remembered (the key hashes every weight of the part)."""

    def __init__(self) -> None:
        self.pending: Dict[Tuple[frozenset, bool, str], concurrent.futures.Future] = {}
        self.thread: Optional[concurrent.futures.ThreadPoolExecutor] = None
        self.paths: Dict[Tuple[frozenset, bool, str], Tuple[Any, List[int], List[int], str]] = {}

    def close(self) -> None:
        """Waits for background compiles (their errors are dropped: a candidate that needs one raised it
        from compile_part) and stops the thread."""
        if self.thread is not None:
            self.thread.shutdown(wait=True)
            self.thread = None


def _work(builder: PartBuilder) -> _Work:
    return builder.state("inductor", _Work)


def _key(builder: PartBuilder, part: Sequence[int], freezing: bool, precision: str = "fp32") -> Tuple[frozenset, bool, str]:
    # A part's getitems come with their operator whether listed or not (module_of): the same module.
    nodes = builder.graph["nodes"]
    return frozenset(i for i in part if nodes[i]["op"] != "getitem"), freezing, precision


def packable_linear(builder: PartBuilder, node: Optional[torch.fx.Node]) -> bool:
    """On CPU with MKL, a linear whose weight is a float32 matrix of the program: its weight packed
    when the package first runs, for MKL's GEMM or oneDNN's, whichever measures faster there
    (csrc/ops/register_packed_linear.cpp). Inductor's just-in-time freezing packs for MKL; its
    ahead-of-time compile cannot pack (a packed matrix cannot be saved) and uses oneDNN's linear."""
    if node is None or node.target is not torch.ops.aten.linear.default or builder.device.type != "cpu" \
            or not torch._C.has_mkl:
        return False
    weight = node.args[1] if len(node.args) > 1 else None
    if not isinstance(weight, torch.fx.Node) or weight.name not in builder.weights:
        return False
    w = builder.weights[weight.name]
    return w.dtype == torch.float32 and w.dim() == 2 and not node.kwargs


def packs_linear_at_run_time(builder: PartBuilder) -> List[int]:
    """The AtenGraph nodes (indices) that Inductor's parts run as autograph::packed_linear."""
    return [i for i, node in enumerate(builder.graph["nodes"])
            if packable_linear(builder, builder.fx_nodes.get(node["name"]))]


def module_of(builder: PartBuilder, part: Sequence[int], precision: str = "fp32"):
    """The part as Inductor compiles it (parts.PartBuilder.module_of): eligible linears as
    autograph::packed_linear (packable_linear, a weight of the part's module); below fp32 none packed and
    its matmuls and convolutions computing in `precision` (lowered_module)."""
    if precision != "fp32":
        gm, input_ids, output_ids = builder.module_of(part)
        return lowered_module(gm, precision), input_ids, output_ids

    def packed(node: torch.fx.Node, env: Dict[torch.fx.Node, torch.fx.Node]) -> Any:
        if packable_linear(builder, node) and env[node.args[1]].op == "get_attr":
            return torch.ops.autograph.packed_linear.default
        return None
    return builder.module_of(part, retarget=packed)


def compile_in_background(builder: PartBuilder, part: Sequence[int], label: str, freezing: bool = True,
                          precision: str = "fp32") -> None:
    """Starts compiling `part` on a background thread; a later compile_part of the same nodes waits for
    it. The search's C++ releases the GIL, as do Inductor's compiler runs, so a part known before planning
    (the whole graph) compiles while the search runs."""
    work = _work(builder)
    if work.thread is None:
        work.thread = concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="autograph-inductor")
    key = _key(builder, part, freezing, precision)
    if key not in work.pending:
        work.pending[key] = work.thread.submit(_compile_now, builder, list(part), label, freezing, precision)


def compile_part(builder: PartBuilder, part: Sequence[int], label: str, freezing: bool = True,
                 precision: str = "fp32") -> CompiledPart:
    """The part's AOTInductor package (from the disk cache when there, or from the background compile of
    the same nodes). `precision`: as module_of's."""
    pending = _work(builder).pending.get(_key(builder, part, freezing, precision))
    if pending is not None:
        return pending.result()
    return _compile_now(builder, part, label, freezing, precision)


def is_cached(builder: PartBuilder, part: Sequence[int], freezing: bool = True, precision: str = "fp32") -> bool:
    """Whether the part's AOTInductor package is in the disk cache (compile_part then only reads it)."""
    return part_cache.contains(_package_path(builder, part, freezing, precision)[3], _SUFFIX)


def compile_just_in_time(builder: PartBuilder, part: Sequence[int], label: str, freezing: bool = True,
                         precision: str = "fp32") -> Tuple[Callable[..., Any], List[int], List[int]]:
    """The part compiled by Inductor just in time (compile_fx, as torch.compile does after tracing;
    weights frozen with `freezing`): a callable on the part's input tensors, with its input / output
    ids. The same graph and settings as compile_part's package, so the same kernels, without the
    ahead-of-time wrapper's C++ build, the link of its weights and the packaging, which make a package
    far slower to build (bench/results/export-path-2026-11-26e-cpu); what is timed to decide whether
    the package is worth making. `precision`: as module_of's."""
    from torch._inductor.compile_fx import compile_fx
    gm, input_ids, output_ids = module_of(builder, part, precision)
    builder.progress(f"compiling {label} with Inductor just in time ({len(part)} operators)")
    with (torch.no_grad(), torch._inductor.config.patch(freezing=freezing), vec_isa_checks_remembered(),
          fake_tensor_errors_quiet()):
        compiled = compile_fx(gm, list(builder.examples(input_ids)))
    return compiled, input_ids, output_ids


def _package_path(builder: PartBuilder, part: Sequence[int], freezing: bool, precision: str = "fp32"):
    """The part's module, its input / output ids, and where its package is cached (remembered: the key
    hashes every weight of the part)."""
    work, key = _work(builder), _key(builder, part, freezing, precision)
    if key not in work.paths:
        gm, input_ids, output_ids = module_of(builder, part, precision)
        configs = aoti_configs(freezing=freezing)
        content = part_digest(gm, builder.examples(input_ids), builder.device, configs, builder.weight_digests)
        entry = part_cache.key("aoti-part", builder.device, inductor_compiler(configs), content)
        work.paths[key] = (gm, input_ids, output_ids, entry)
    return work.paths[key]


def _compile_now(builder: PartBuilder, part: Sequence[int], label: str, freezing: bool,
                 precision: str = "fp32") -> CompiledPart:
    gm, input_ids, output_ids, entry = _package_path(builder, part, freezing, precision)
    _work(builder).paths.pop(_key(builder, part, freezing, precision), None)  # compiled once: the module is not kept
    package = part_cache.read(entry, _SUFFIX)
    builder.cached += package is not None
    if package is None:
        builder.progress(f"compiling {label} with Inductor ({len(part)} operators)")
        with part_cache.writing(entry, _SUFFIX) as partial, torch.no_grad():
            compile_graph_module(gm, builder.examples(input_ids), partial, aoti_configs(freezing=freezing))
        package = part_cache.commit(partial, entry, _SUFFIX)
    return CompiledPart(package, input_ids, output_ids, PART_OP, _FORMAT, precision)


def compile_for_every_shape(ep: torch.export.ExportedProgram, device: torch.device,
                            progress: Callable[[str], None]) -> Tuple[bytes, List[Dict[str, Any]], bool]:
    """One AOTInductor package of a whole program with dynamic shapes (weights frozen), for every shape
    in its range; the outputs' spec (-1 where a size is symbolic) and whether it came from the disk cache.
    Raises where the program runs a recurrent layer (RECURRENT_OPS): such a package unrolls it for the
    longest sequence in the range, and other shapes run on ATen's kernels instead."""
    recurrent = sorted({n.target._schema.name for n in ep.graph.nodes
                        if isinstance(n.target, torch._ops.OpOverload)} & RECURRENT_OPS)  # AtenGraph's op names
    if recurrent:
        raise Error(f"the program runs a recurrent layer ({', '.join(recurrent)}), which Inductor unrolls step by "
                    "step; no package is compiled for every shape, other shapes run on ATen's kernels")
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


def load_every_shape(package: bytes) -> Callable[..., Any]:
    """The package of compile_for_every_shape loaded in this process (a callable on the program's inputs).
    Python's loader asks Inductor for the CPU's vector ISA, also when the package was cached."""
    import os
    import tempfile
    with tempfile.TemporaryDirectory() as workdir:
        path = os.path.join(workdir, "every_shape.pt2")
        with open(path, "wb") as f:
            f.write(package)
        with vec_isa_checks_remembered():
            return torch._inductor.aoti_load_package(path)


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


def _recurrent(graph: Dict[str, Any]) -> bool:
    """Whether the graph runs a recurrent layer (RECURRENT_OPS), which Inductor's parts leave out."""
    return any(node["op"] in RECURRENT_OPS for node in graph["nodes"])


class InductorCompiler:
    """Inductor's candidates (compilers/base.Compiler): "whole" (the graph as one part), "plan" (the
    plan's parts, where it runs groups side by side and was verified), "whole_unfrozen" (the whole graph
    without freezing, where a weight feeds several compute-bound operators: shares_weights). Recurrent
    layers (RECURRENT_OPS) are left out of every part: the graph around them is its parts."""
    name = "Inductor"
    option = "inductor"
    label = "inductor"
    # Each part lowered is one more compile (lowered_module): not worth a graph cut into parts for it; a
    # part is a long compile beside the others' conversions, so its parts do not mix either.
    lowers_by_parts = False
    mixes_parts = False
    compiles_apart = False
    lowers_apart = ()
    reverts = ()  # its lowered packages are compiled code, with no operations to turn back

    def missing(self) -> Optional[str]:
        return None  # part of torch

    def offers(self, builder: PartBuilder, graph: Dict[str, Any], body: Dict[str, Any], settings: Settings,
               plan_unverified: bool) -> Dict[str, List[List[int]]]:
        whole = without_ops(graph, whole_graph_part(body), RECURRENT_OPS)
        if not whole:
            return {}
        cuts = {"whole": whole}
        plan_parts = without_ops(graph, closed(graph, parts_of_plan(body)), RECURRENT_OPS)
        # Not from a plan that is to be verified later: its concurrency is the analytical model's guess.
        # resnext50's unverified plan had several parts, each a long compile, and ran no faster than the
        # whole graph's; the verified plan left no parts to compile.
        if 1 < len(plan_parts) <= MAX_PARTS and not plan_unverified:
            cuts["plan"] = plan_parts
        if shares_weights(graph, body, packs_linear_at_run_time(builder)):
            cuts["whole_unfrozen"] = cuts["whole"]
        return cuts

    def lowered(self, device: torch.device, precision: str, candidate: str) -> List[str]:
        # The whole graph's package once more, its matmuls and convolutions lowered (lowered_module): bf16
        # on CUDA and on a CPU with bf16 instructions (elsewhere oneDNN emulates it, slower), fp16 on CUDA.
        if precision == "int8" and device.type == "cpu":  # below bf16: its bf16 competes with int8's candidates
            precision = "bf16"
        if candidate != "whole" or precision not in LOWERED_DTYPES:
            return []
        if device.type == "cuda" or (precision == "bf16" and device.type == "cpu" and cpu_has_bf16()):
            return [precision]
        return []

    def lowering(self) -> str:
        return "Inductor's whole graph to bf16 on CUDA or a CPU with bf16 instructions, to fp16 on CUDA"

    def variants(self, builder: PartBuilder, parts: List[List[int]], precision: str) -> Tuple[str, ...]:
        return ("",)

    def lower(self, builder: PartBuilder, name: str, parts: List[List[int]], labels: List[str],
              compiled: List[CompiledPart], precision: str, variant: str = "") -> Callable[[], List[CompiledPart]]:
        # In this process: compiled when waited for, as start's.
        return lambda: [compile_part(builder, p, label, freezing=name != "whole_unfrozen", precision=precision)
                        for p, label in zip(parts, labels)]

    def revert(self, builder: PartBuilder, part: Sequence[int], lowered: CompiledPart, float32: CompiledPart,
               in_float: Sequence[int]) -> CompiledPart:
        raise Error(f"{self.name} turns no operation of a lowered part back to float32 (reverts)")

    def start(self, builder: PartBuilder, name: str, parts: List[List[int]],
              labels: List[str]) -> Callable[[], List[CompiledPart]]:
        # In this process: compiled when waited for (a part compiling in the background is waited for).
        return lambda: [compile_part(builder, p, label, freezing=name != "whole_unfrozen")
                        for p, label in zip(parts, labels)]

    def node_times(self, builder: PartBuilder, part: List[int], made: CompiledPart) -> NodeTimes:
        return NOT_PROFILED  # its parts do not mix with others' (mixes_parts)

    def beside_search(self, builder: PartBuilder, graph: Dict[str, Any], settings: Settings) -> None:
        if not _recurrent(graph):  # else the whole graph is cut around them once a plan is there (offers)
            compile_in_background(builder, every_node(graph), "whole part 1/1")

    def before_search(self, builder: PartBuilder, graph: Dict[str, Any], settings: Settings) -> Dict[str, Any]:
        # The whole graph compiled just in time (a JustInTime; none where its package is in the disk cache),
        # and lowered to each precision Inductor lowers it to under option precision ("whole_bf16").
        part = every_node(graph)
        ready: Dict[str, Any] = {}
        if _recurrent(graph):  # its parts around them are compiled ahead of time (offers, start)
            return ready
        for precision in ["fp32"] + self.lowered(builder.device, settings.precision, "whole"):
            name = "whole" if precision == "fp32" else f"whole_{precision}"
            if is_cached(builder, part, precision=precision):
                continue
            label = f"{name} part 1/1"
            try:
                ready[name] = JustInTime(*compile_just_in_time(builder, part, label, precision=precision), part,
                                         label, True, precision)
            except Exception as e:  # noqa: BLE001 - the candidate is dropped and the report says why
                ready[name] = e
        return ready

    def package_just_in_time(self, builder: PartBuilder, made: JustInTime) -> CompiledPart:
        """The package of a part compiled just in time (the same kernels, ahead of time)."""
        return compile_part(builder, made.part, made.label, freezing=made.freezing, precision=made.precision)


COMPILER = InductorCompiler()


__all__ = ["COMPILER", "InductorCompiler", "MAX_PARTS", "PART_OP", "RECURRENT_OPS", "cache_dir", "compile_for_every_shape",
           "compile_in_background", "compile_just_in_time", "compile_part", "is_cached",
           "module_of", "package_graph", "packs_linear_at_run_time", "shares_weights"]
