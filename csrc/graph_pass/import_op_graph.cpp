#include "graph_pass/import_op_graph.h"

#include <torch/csrc/jit/ir/ir.h>

#include <queue>
#include <set>
#include <unordered_map>

#include "core/operator_flops.h"
#include "autograph/error.h"
#include "graph_pass/graph_values.h"
#include "graph_pass/describe_merge_candidate.h"
#include "graph_pass/top_level_nodes.h"

namespace autograph {

using torch::jit::Node;
using torch::jit::Value;

namespace {

// Nodes that only compute metadata or move references around; never a kernel.
const std::set<c10::Symbol>& MetadataKinds() {
  static const std::set<c10::Symbol> kinds = {
      c10::prim::NumToTensor, c10::aten::size, c10::aten::dim, c10::aten::len, c10::prim::device,
      c10::prim::dtype, c10::aten::Int, c10::aten::Float, c10::aten::ScalarImplicit, c10::prim::ListConstruct,
      c10::prim::ListUnpack, c10::prim::TupleConstruct, c10::prim::TupleUnpack, c10::prim::TupleIndex,
      c10::aten::__getitem__, c10::prim::Uninitialized};
  return kinds;
}

// Nodes that read tensor data back to the host: a kernel and a synchronization.
const std::set<c10::Symbol>& HostReadKinds() {
  static const std::set<c10::Symbol> kinds = {c10::aten::item, c10::aten::_local_scalar_dense,
                                              c10::aten::is_nonzero, c10::aten::equal, c10::aten::allclose};
  return kinds;
}


TensorMeta MetaOf(const at::Tensor& t) {
  return TensorMeta{t.sizes().vec(), t.scalar_type()};
}

bool AllOutputsAliasInputs(const std::vector<at::Tensor>& ins, const std::vector<at::Tensor>& outs) {
  for (const at::Tensor& o : outs) {
    if (!o.has_storage()) return false;
    bool alias = false;
    for (const at::Tensor& i : ins) alias |= i.has_storage() && o.storage().is_alias_of(i.storage());
    if (!alias) return false;
  }
  return true;
}

// What running a node showed: its kind and cost, from real inputs and outputs (an OpNode without
// its graph links).
OpNode Record(const Node* node, const std::vector<c10::IValue>& inputs, const std::vector<c10::IValue>& outputs) {
  OpNode r;
  std::vector<at::Tensor> ins, outs;
  for (const auto& v : inputs) CollectTensors(v, &ins);
  for (const auto& v : outputs) CollectTensors(v, &outs);
  const std::string op = node->kind().toQualString();
  r.op = op;

  if (!node->blocks().empty()) {
    r.kind = OpKind::ControlFlow;
  } else if (HostReadKinds().count(node->kind())) {
    r.kind = OpKind::MemoryBound;
  } else if (MetadataKinds().count(node->kind())) {
    r.kind = OpKind::View;
  } else if (ins.empty() && outs.empty()) {
    r.kind = OpKind::View;  // scalar arithmetic on the host
  } else if (!WritesAnInput(node) && !outs.empty() && AllOutputsAliasInputs(ins, outs)) {
    r.kind = OpKind::View;  // decided by what really happened: reshape that copied is a kernel
  } else {
    r.kind = IsComputeBoundOp(op) ? OpKind::ComputeBound : OpKind::MemoryBound;
  }

  for (const auto& t : ins) r.inputs.push_back(MetaOf(t));
  for (const auto& t : outs) r.outputs.push_back(MetaOf(t));
  if (r.kind == OpKind::View) return r;
  r.flops = r.kind == OpKind::ControlFlow ? 0 : EstimateFlops(op, inputs, outputs);
  for (const auto& m : r.outputs) r.bytes_written += m.nbytes();
  // Bytes read: each tensor input once, weights being those that come from frozen constants.
  size_t t = 0;
  for (size_t i = 0; i < inputs.size() && i < node->inputs().size(); ++i) {
    std::vector<at::Tensor> part;
    CollectTensors(inputs[i], &part);
    bool constant = node->input(i)->node()->kind() == c10::prim::Constant;
    for (size_t k = 0; k < part.size(); ++k, ++t) {
      r.bytes_read += r.inputs[t].nbytes();
      if (constant) r.weight_bytes += r.inputs[t].nbytes();
    }
  }
  for (; t < r.inputs.size(); ++t) r.bytes_read += r.inputs[t].nbytes();  // free variables of blocks
  return r;
}

// Operators out of nodes: launching nodes anchor groups; views join their sole producer group, else
// their sole consumer group, else stand alone. A view that must keep its order with a node (around an
// in-place write or a side effect) joins a group only if that node is in the group too: in its
// producer's group it could have to run both before and after a writer that reads that producer
// (hardswish_ after a conv, then the conv output's size()), a cycle.
struct NodeGroups {
  std::vector<int> group;   // node position -> group
  std::vector<int> anchor;  // group -> position of its anchor node
};

NodeGroups GroupNodes(const torch::jit::Graph& graph, const TopLevelNodes& nodes,
                      const std::unordered_map<const Node*, OpNode>& records,
                      const std::vector<std::pair<int, int>>& order_pairs) {
  const torch::jit::Block* top = graph.block();
  const std::vector<Node*>& order = nodes.order;
  const int n = static_cast<int>(order.size());
  NodeGroups g{std::vector<int>(n, -1), {}};
  std::vector<std::vector<int>> partners(n);  // the positions each node must keep its order with
  for (const auto& [earlier, later] : order_pairs) {
    partners[earlier].push_back(later);
    partners[later].push_back(earlier);
  }
  auto may_join = [&](int i, int group) {
    if (HasOrderedSideEffects(order[i])) return false;  // a print reads no tensor, yet runs on its own
    for (int p : partners[i])
      if (g.group[p] != group) return false;
    return true;
  };
  auto producer_group = [&](Value* v) -> int {  // -2: constant or graph input
    Node* p = v->node();
    if (p->kind() == c10::prim::Constant || p == graph.param_node()) return -2;
    return g.group[nodes.position.at(TopLevel(p, top))];
  };
  for (int i = 0; i < n; ++i) {
    if (records.at(order[i]).kind != OpKind::View) {
      g.group[i] = static_cast<int>(g.anchor.size());
      g.anchor.push_back(i);
      continue;
    }
    std::vector<Value*> reads;
    ReadValues(order[i], &reads);
    std::set<int> owners;
    for (Value* v : reads) owners.insert(producer_group(v));
    owners.erase(-2);
    if (owners.size() == 1 && *owners.begin() >= 0 && may_join(i, *owners.begin())) g.group[i] = *owners.begin();
  }
  for (int i = n - 1; i >= 0; --i) {
    if (g.group[i] >= 0) continue;
    std::set<int> consumers;
    bool is_graph_output = false;
    for (Value* v : order[i]->outputs()) {
      for (const torch::jit::Use& use : v->uses()) {
        if (use.user == graph.return_node()) {
          is_graph_output = true;
        } else {
          consumers.insert(g.group[nodes.position.at(TopLevel(use.user, top))]);
        }
      }
    }
    if (consumers.size() == 1 && !is_graph_output && may_join(i, *consumers.begin())) {
      g.group[i] = *consumers.begin();
    } else {
      g.group[i] = static_cast<int>(g.anchor.size());
      g.anchor.push_back(i);
    }
  }
  return g;
}

// Pairs (earlier, later) of positions that must keep their order: around in-place writes and side
// effects.
std::vector<std::pair<int, int>> OrderPairs(const std::shared_ptr<torch::jit::Graph>& graph, const TopLevelNodes& nodes) {
  std::vector<std::pair<int, int>> pairs = InPlaceOrderPairs(graph, nodes.order);
  for (const auto& pair : SideEffectOrderPairs(nodes.order)) pairs.push_back(pair);
  return pairs;
}

// Edges between groups: data dependences, plus the order pairs.
std::vector<std::set<int>> GroupEdges(const std::shared_ptr<torch::jit::Graph>& graph, const TopLevelNodes& nodes,
                                      const NodeGroups& g, const std::vector<std::pair<int, int>>& order_pairs) {
  const torch::jit::Block* top = graph->block();
  std::vector<std::set<int>> succs(g.anchor.size());
  auto add_edge = [&](int from, int to) {
    if (from != to) succs[from].insert(to);
  };
  for (size_t i = 0; i < nodes.order.size(); ++i) {
    std::vector<Value*> reads;
    ReadValues(nodes.order[i], &reads);
    for (Value* v : reads) {
      Node* p = v->node();
      if (p->kind() == c10::prim::Constant || p == graph->param_node()) continue;
      add_edge(g.group[nodes.position.at(TopLevel(p, top))], g.group[i]);
    }
  }
  for (const auto& [earlier, later] : order_pairs) add_edge(g.group[earlier], g.group[later]);
  return succs;
}

// Groups in topological order, ties by graph position (so ids follow the source order).
std::vector<int> TopologicalGroupOrder(const std::vector<std::set<int>>& succs, const std::vector<int>& anchor) {
  const int g = static_cast<int>(succs.size());
  std::vector<int> indegree(g, 0);
  for (int u = 0; u < g; ++u)
    for (int v : succs[u]) indegree[v]++;
  std::priority_queue<std::pair<int, int>, std::vector<std::pair<int, int>>, std::greater<>> ready;
  for (int u = 0; u < g; ++u)
    if (indegree[u] == 0) ready.emplace(anchor[u], u);
  std::vector<int> topo;
  while (!ready.empty()) {
    int u = ready.top().second;
    ready.pop();
    topo.push_back(u);
    for (int v : succs[u])
      if (--indegree[v] == 0) ready.emplace(anchor[v], v);
  }
  TORCH_CHECK(static_cast<int>(topo.size()) == g, "ImportOpGraph: grouping produced a cycle (internal error)");
  return topo;
}

}  // namespace

OpGraph ImportOpGraph(std::shared_ptr<torch::jit::Graph> graph, const std::vector<c10::IValue>& example_inputs,
                      std::vector<c10::IValue>* outputs) {
  const GraphValues values = GraphValues::Record(std::move(graph), example_inputs);
  if (outputs) *outputs = values.outputs();
  return ImportOpGraph(values);
}

OpGraph ImportOpGraph(const GraphValues& values) {
  const std::shared_ptr<torch::jit::Graph>& graph = values.graph();
  values.CheckFits(*graph, "ImportOpGraph");
  const TopLevelNodes nodes = TopLevelNodesOf(*graph);
  // What each node really did in the recorded run.
  std::unordered_map<const Node*, OpNode> records;
  for (const Node* n : nodes.order) {
    const std::vector<c10::IValue>* in = values.InputsOf(n);
    if (!in) throw Error("ImportOpGraph: node " + std::string(n->kind().toQualString()) +
                         " has no recorded run; record the graph after changing it (internal error)");
    std::vector<c10::IValue> out;
    for (const Value* v : n->outputs()) {
      const c10::IValue* o = values.Find(v);
      out.push_back(o ? *o : c10::IValue());
    }
    records[n] = Record(n, *in, out);
  }

  const std::vector<std::pair<int, int>> order_pairs = OrderPairs(graph, nodes);
  const NodeGroups groups = GroupNodes(*graph, nodes, records, order_pairs);
  const std::vector<std::set<int>> succs = GroupEdges(graph, nodes, groups, order_pairs);
  const std::vector<int> topo = TopologicalGroupOrder(succs, groups.anchor);
  std::vector<int> new_id(topo.size(), -1);
  for (size_t i = 0; i < topo.size(); ++i) new_id[topo[i]] = static_cast<int>(i);

  OpGraph result(graph);
  std::vector<std::vector<Node*>> members(topo.size());
  for (size_t i = 0; i < nodes.order.size(); ++i) members[groups.group[i]].push_back(nodes.order[i]);
  for (int u : topo) {
    Node* anchor_node = nodes.order[groups.anchor[u]];
    OpNode node = std::move(records.at(anchor_node));
    node.anchor = anchor_node;
    node.jit_nodes = members[u];
    result.AddNode(std::move(node));
  }
  for (size_t u = 0; u < succs.size(); ++u)
    for (int v : succs[u]) result.AddEdge(new_id[u], new_id[v]);
  for (int id = 0; id < result.size(); ++id) result.node(id).merge = DescribeMergeCandidate(result, id);
  return result;
}

}  // namespace autograph
