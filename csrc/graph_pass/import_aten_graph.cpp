#include "graph_pass/import_aten_graph.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <optional>
#include <set>

#include "autograph/error.h"
#include "core/operator_flops.h"
#include "executor/aten_operation.h"
#include "executor/compiled_part_ops.h"
#include "executor/inductor_part.h"

namespace autograph {

namespace {

bool IsViewSchema(const c10::FunctionSchema& schema) {
  if (schema.returns().empty()) return false;
  for (const c10::Argument& r : schema.returns())
    if (!r.alias_info() || r.alias_info()->isWrite()) return false;
  return true;
}

// What one node reads and how it is described to the cost model: the schema's arguments in order,
// tensors as meta tensors of the recorded shapes (EstimateFlops reads shapes and constants only).
struct NodeRecord {
  OpKind kind = OpKind::MemoryBound;
  bool writes_input = false;
  std::vector<c10::IValue> arguments, results;
  std::vector<int> reads;  // value ids, each once
  std::optional<double> flops;  // given (an Inductor part's spec), not estimated
};

at::Tensor MetaTensor(const AtenValueInfo& info) {
  return at::empty_strided(info.meta.shape, info.stride, at::TensorOptions().dtype(info.meta.dtype).device(at::kMeta));
}

c10::IValue ArgumentValue(const AtenGraph& g, const AtenArgument& a) {
  auto value_of = [&](int v) -> c10::IValue { return g.values[v].tensor ? c10::IValue(MetaTensor(g.values[v])) : c10::IValue(); };
  switch (a.kind) {
    case AtenArgument::Kind::Value:
      return value_of(a.value);
    case AtenArgument::Kind::ValueList: {
      c10::List<at::Tensor> list;
      for (const auto& v : a.values)
        if (v && g.values[*v].tensor) list.push_back(MetaTensor(g.values[*v]));
      return list;
    }
    case AtenArgument::Kind::Constant:
      return a.constant;
  }
  return c10::IValue();
}

NodeRecord RecordNode(const AtenGraph& g, int index) {
  const AtenNode& node = g.nodes[index];
  NodeRecord r;
  std::set<int> read;
  auto note_reads = [&](const AtenArgument& a) {
    if (a.kind == AtenArgument::Kind::Value) read.insert(a.value);
    for (const auto& v : a.values)
      if (v) read.insert(*v);
  };
  for (const AtenArgument& a : node.args) note_reads(a);
  for (const auto& [name, a] : node.kwargs) note_reads(a);
  r.reads.assign(read.begin(), read.end());
  for (int v : node.outputs) r.results.push_back(g.values[v].tensor ? c10::IValue(MetaTensor(g.values[v])) : c10::IValue());
  if (node.op == "getitem") {
    r.kind = OpKind::View;
    return r;
  }
  const c10::FunctionSchema& schema = AtenOperatorOf(node).schema();
  r.arguments.resize(schema.arguments().size());
  for (size_t i = 0; i < node.args.size() && i < r.arguments.size(); ++i) r.arguments[i] = ArgumentValue(g, node.args[i]);
  for (const auto& [name, a] : node.kwargs)
    if (std::optional<size_t> i = schema.argumentIndexWithName(name)) r.arguments[*i] = ArgumentValue(g, a);
  r.writes_input = schema.is_mutable();
  if (r.writes_input) r.kind = OpKind::MemoryBound;
  else if (IsViewSchema(schema)) r.kind = OpKind::View;
  else r.kind = IsComputeBoundOp(node.op) ? OpKind::ComputeBound : OpKind::MemoryBound;
  if (IsCompiledPartOp(node.op) && r.arguments.size() == 3 && r.arguments[2].isString()) {
    // A compiled part: its operators' FLOPs and kind, summed up when it was cut, stand for it.
    const InductorPartCost cost = InductorPartCostOf(r.arguments[2].toStringRef());
    r.kind = cost.compute_bound ? OpKind::ComputeBound : OpKind::MemoryBound;
    r.flops = cost.flops;
  }
  return r;
}

// Which node's operator each node belongs to: launching nodes own theirs; a view joins its inputs'
// producer operator, else (second pass, last to first) its one reader's, else owns its own.
std::vector<int> OwnersOf(const AtenGraph& g, const std::vector<NodeRecord>& records, const std::vector<int>& producer,
                          const std::vector<std::vector<int>>& readers, const std::vector<bool>& is_output) {
  const int n = static_cast<int>(g.nodes.size());
  std::vector<int> owner(n, -1);
  for (int i = 0; i < n; ++i) {
    if (records[i].kind != OpKind::View) {
      owner[i] = i;
      continue;
    }
    std::set<int> producers;
    for (int v : records[i].reads) producers.insert(producer[v] < 0 ? -1 : owner[producer[v]]);
    if (producers.size() == 1 && *producers.begin() >= 0) owner[i] = *producers.begin();
  }
  for (int i = n - 1; i >= 0; --i) {
    if (owner[i] >= 0) continue;
    std::set<int> reading;
    bool output = false;
    for (int v : g.nodes[i].outputs) {
      output |= is_output[v];
      for (int r : readers[v]) reading.insert(r);
    }
    owner[i] = !output && reading.size() == 1 ? owner[*reading.begin()] : i;
  }

  return owner;
}

}  // namespace

OpGraph ImportAtenGraph(std::shared_ptr<const AtenGraph> graph) {
  const AtenGraph& g = *graph;
  const int n = static_cast<int>(g.nodes.size());
  std::vector<NodeRecord> records;
  records.reserve(n);
  for (int i = 0; i < n; ++i) records.push_back(RecordNode(g, i));

  std::vector<int> producer(g.values.size(), -1);  // node defining each value; -1: an input
  std::vector<std::vector<int>> readers(g.values.size());
  for (int i = 0; i < n; ++i) {
    for (int v : g.nodes[i].outputs) producer[v] = i;
    for (int v : records[i].reads) readers[v].push_back(i);
  }
  std::vector<bool> is_output(g.values.size(), false);
  for (int v : g.outputs) is_output[v] = true;

  const std::vector<int> owner = OwnersOf(g, records, producer, readers, is_output);

  OpGraph ops(graph);
  std::vector<int> op_of_anchor(n, -1);
  std::vector<bool> weight(g.values.size(), false);  // a parameter, buffer or constant, or a view of one
  for (size_t k = 0; k < g.inputs.size(); ++k) weight[g.inputs[k]] = g.input_is_weight[k];
  for (int i = 0; i < n; ++i) {
    if (records[i].kind == OpKind::View) {
      bool all_weights = !records[i].reads.empty();
      for (int v : records[i].reads) all_weights = all_weights && weight[v];
      for (int v : g.nodes[i].outputs) weight[v] = all_weights;
    }
    if (owner[i] != i) continue;
    OpNode op;
    op.op = g.nodes[i].op;
    op.kind = records[i].kind;
    op.aten_anchor = i;
    for (int v : records[i].reads)
      if (g.values[v].tensor) {
        op.inputs.push_back(g.values[v].meta);
        op.bytes_read += g.values[v].meta.nbytes();
        if (weight[v]) op.weight_bytes += g.values[v].meta.nbytes();
      }
    for (int v : g.nodes[i].outputs)
      if (g.values[v].tensor) {
        op.outputs.push_back(g.values[v].meta);
        op.bytes_written += g.values[v].meta.nbytes();
      }
    if (records[i].flops) op.flops = *records[i].flops;
    else if (op.kind != OpKind::View) op.flops = EstimateFlops(op.op, records[i].arguments, records[i].results);
    else op.bytes_read = op.bytes_written = op.weight_bytes = 0;
    op_of_anchor[i] = ops.AddNode(std::move(op));
  }
  for (int i = 0; i < n; ++i) ops.node(op_of_anchor[owner[i]]).aten_nodes.push_back(i);  // in node order

  for (int i = 0; i < n; ++i) {
    const int to = op_of_anchor[owner[i]];
    for (int v : records[i].reads) {
      if (producer[v] < 0) continue;
      const int from = op_of_anchor[owner[producer[v]]];
      if (from != to) ops.AddEdge(from, to);
    }
  }
  // An operator that writes one of its inputs keeps its place among all the others.
  for (int i = 0; i < n; ++i) {
    if (!records[i].writes_input) continue;
    const int barrier = op_of_anchor[owner[i]];
    for (int other = 0; other < ops.size(); ++other) {
      if (other < barrier) ops.AddEdge(other, barrier);
      if (other > barrier) ops.AddEdge(barrier, other);
    }
  }
  return ops;
}

}  // namespace autograph
