"""A compiler's profile of a part made from ONNX, read back to the part's graph nodes
(export/compilers/onnx_profile.py, onnx_export.fx_names_of), and each piece's share of it
(export/parts/profile.py): what the mix of compilers is estimated from."""
import pytest
import torch

from autograph.export.compilers import onnx_export, onnx_profile
from autograph.export.parts import NOT_PROFILED


def test_a_kernel_leads_back_to_the_longest_node_or_onnx_name_it_begins_with():
    nodes = {"relu", "relu_9", "linear", "conv2d_9"}
    onnx_names = {"node_MatMul_1": "linear", "val_3": "linear"}
    assert onnx_profile.node_of("relu_9_nchwc", nodes, onnx_names) == "relu_9"
    assert onnx_profile.node_of("node_conv2d_9/WithoutBiases", nodes, onnx_names) == "conv2d_9"
    assert onnx_profile.node_of("node_MatMul_1/MatMulAddFusion", nodes, onnx_names) == "linear"
    assert onnx_profile.node_of("ReorderOutput_token_176", nodes, onnx_names) is None
    assert onnx_profile.node_of("SkipLayerNormalization", nodes, onnx_names) is None


def test_unnamed_kernels_count_to_the_node_run_before_them_and_the_named_share_is_said():
    kernels = [(["ReorderInput"], 1.0), (["node_conv"], 4.0), (["conv_reorder_token_3"], 2.0),
               (["Fused_token_9"], 1.0), (["relu_nchwc"], 3.0), (["MVN_7", "node_add"], 2.0)]
    times = onnx_profile.attributed(kernels, {"conv", "relu", "add"}, {"node_conv": "conv"})
    assert times.us == pytest.approx({"conv": 1.0 + 4.0 + 2.0 + 1.0, "relu": 3.0, "add": 2.0})
    assert times.named == pytest.approx((4.0 + 2.0 + 3.0 + 2.0) / 13.0)
    assert onnx_profile.attributed([(["ReorderInput"], 1.0)], {"conv"}, {}) == NOT_PROFILED


def test_a_node_without_a_kernel_shares_the_kernel_of_the_one_node_reading_it():
    """ONNX Runtime names a convolution fused with its ReLU after the ReLU's output ("relu_1_nchwc"): the
    convolution, which no kernel names, shares that kernel's time (a cut between the two would otherwise
    find the convolution free); a node read by two others, or named by a kernel, keeps its own."""
    kernels = [(["relu_nchwc"], 4.0), (["node_pool"], 1.0), (["relu_1_nchwc"], 6.0), (["ReorderOutput"], 1.0)]
    nodes = {"conv", "relu", "pool", "conv_1", "relu_1", "view"}
    read_from = {"relu": ["conv"], "pool": ["relu"], "conv_1": ["view"], "view": ["pool"], "relu_1": ["conv_1"]}
    times = onnx_profile.attributed(kernels, nodes, {}, read_from)
    assert times.us == pytest.approx({"relu": 2.0, "conv": 2.0, "pool": 1.0, "relu_1": 2.0 + 1.0, "conv_1": 2.0,
                                      "view": 2.0}), times.us
    assert {frozenset(names) for names in times.fused} == {frozenset({"relu", "conv"}),
                                                           frozenset({"relu_1", "conv_1", "view"})}, times.fused
    alone = onnx_profile.attributed(kernels, nodes, {})
    assert alone.us == pytest.approx({"relu": 4.0, "pool": 1.0, "relu_1": 7.0}) and alone.fused == ()


def test_only_the_producers_a_node_alone_reads_can_be_fused_into_it():
    class Block(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = torch.nn.Conv1d(2, 4, 3)

        def forward(self, x):
            y = torch.relu(self.conv(x))
            return y * 2.0 + y, torch.sigmoid(y)

    from autograph import export as export_module
    from autograph.export import parts as parts_layer
    x = torch.randn(1, 2, 16)
    decomposed = torch.export.export(Block().eval(), (x,)).run_decompositions({})
    graph, _, imported = export_module.aten_import.import_graph(decomposed)
    builder = parts_layer.PartBuilder(decomposed, graph, imported.value_of, imported.weights, torch.device("cpu"))
    targets = {n["name"]: n["op"] for n in graph["nodes"]}
    read = onnx_profile.read_alone(builder, list(range(len(graph["nodes"]))))

    def named(op):
        return [name for name, target in targets.items() if target.startswith(f"aten::{op}")]
    (conv,), (relu,), (mul,), (add,) = named("conv"), named("relu"), named("mul"), named("add")
    assert read[relu] == [conv] and read[add] == [mul], read  # the ReLU's output is read thrice: fused into none
    assert all(relu not in producers for producers in read.values()), read
    assert onnx_profile.read_alone(builder, [graph["nodes"].index(n) for n in graph["nodes"]
                                             if n["name"] in (conv, relu)]) == {conv: [], relu: [conv]}


def test_onnx_names_lead_back_to_the_modules_own_node_names_not_the_exporters_new_ones():
    """torch.onnx traces the module again and names its nodes afresh ("relu", "relu_1"); a part's nodes keep
    the program's names (here "block1_act", "block2_act"): the k-th call of an operator is matched. The
    ONNX nodes' names and FX nodes are read from the exporter's graph, as in the model it serialized."""
    class Two(torch.nn.Module):
        def forward(self, x):
            return torch.relu(torch.relu(x) * 2.0)

    x = torch.randn(4, 8)
    gm = torch.export.export(Two(), (x,)).module()
    relus = [n for n in gm.graph.nodes if n.op == "call_function" and n.target == torch.ops.aten.relu.default]
    assert len(relus) == 2
    relus[0].name, relus[1].name = "block1_act", "block2_act"
    gm.recompile()
    exported = onnx_export.exported_onnx(gm, (x,))
    names = onnx_export.fx_names_of(exported.fx_nodes, gm)
    relu_values = [v for k, v in names.items() if v in ("block1_act", "block2_act")]
    assert set(relu_values) == {"block1_act", "block2_act"}, names
    assert names.get("node_relu") == "block1_act" and names.get("node_relu_1") == "block2_act", names
    # Read from the exporter's graph, as the serialized model has them.
    import onnx
    key = "pkg.torch.onnx.fx_node"
    assert exported.fx_nodes == tuple((n.name, tuple(n.output), next((p.value for p in n.metadata_props if p.key == key), ""))
                                      for n in onnx.load_from_string(exported.model).graph.node)


def test_a_parts_onnx_names_come_from_the_disk_cache_without_exporting_it_again(tmp_path, monkeypatch):
    """The names are read once from the part's ONNX model and kept beside its packages in the disk cache:
    where the packages come from the cache, the next optimize reads the names there too instead of
    exporting the part (on bert_base the export takes longer than both compilers' profiles)."""
    from autograph import export as export_module
    from autograph.export import parts as parts_layer
    monkeypatch.setenv("AUTOGRAPH_CACHE_DIR", str(tmp_path))
    model = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.ReLU(), torch.nn.Linear(8, 4)).eval()
    decomposed = torch.export.export(model, (torch.randn(2, 8),)).run_decompositions({})
    exports = []

    def counted(gm, examples):
        exports.append(1)
        return onnx_export.exported_onnx(gm, examples)

    def names_of_a_fresh_optimize():
        graph, _, imported = export_module.aten_import.import_graph(decomposed)
        builder = parts_layer.PartBuilder(decomposed, graph, imported.value_of, imported.weights, torch.device("cpu"))
        return onnx_export.ExportedPart(builder, list(range(len(graph["nodes"]))), counted).fx_names()

    first = names_of_a_fresh_optimize()
    assert exports == [1] and set(first.values()) >= {"linear", "relu", "linear_1"}, first
    assert names_of_a_fresh_optimize() == first and exports == [1]


def test_a_profile_stops_early_once_its_runs_took_the_budget(monkeypatch):
    from autograph.export.parts import profile
    calls = []
    assert profile.run_profiled(lambda: calls.append(1)) == profile.PROFILED_RUNS == len(calls)
    monkeypatch.setattr(profile, "PROFILE_BUDGET_S", 0.0)
    calls.clear()
    assert profile.run_profiled(lambda: calls.append(1)) == 1 == len(calls)
