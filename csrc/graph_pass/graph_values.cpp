// Recording one run of a graph; see graph_values.h.
#include "graph_pass/graph_values.h"

#include <ATen/core/grad_mode.h>
#include <torch/csrc/jit/ir/ir.h>

#include "autograph/error.h"
#include "executor/compiled_graph.h"
#include "graph_pass/top_level_nodes.h"

namespace autograph {

using torch::jit::Node;
using torch::jit::Value;

std::vector<GraphValues::NodeStamp> GraphValues::StampsOf(const torch::jit::Graph& graph) {
  auto stamp = [](const Node* n) {
    NodeStamp s{n, n->kind().toQualString(), {}, {}};
    for (const Value* v : n->inputs()) s.inputs.push_back(v->unique());
    for (const Value* v : n->outputs()) s.outputs.push_back(v->unique());
    return s;
  };
  std::vector<NodeStamp> stamps = {stamp(graph.param_node()), stamp(graph.return_node())};
  for (const Node* n : graph.nodes())
    if (n->kind() != c10::prim::Constant) stamps.push_back(stamp(n));
  return stamps;
}

bool GraphValues::Fits(const torch::jit::Graph& graph) const {
  return &graph == graph_.get() && StampsOf(graph) == stamps_;
}

void GraphValues::CheckFits(const torch::jit::Graph& graph, const std::string& who) const {
  if (!Fits(graph))
    throw Error(who + ": the recorded values are not of this graph as it is now; record it again after changing it "
                      "(internal error)");
}

GraphValues GraphValues::Record(std::shared_ptr<torch::jit::Graph> graph, std::vector<c10::IValue> inputs) {
  GraphValues record(graph);
  record.inputs_ = inputs;
  for (size_t i = 0; i < inputs.size() && i < graph->inputs().size(); ++i) record.values_[graph->inputs()[i]] = inputs[i];
  CompiledGraph::Observer observer = [&](const Node* n, const std::vector<c10::IValue>& in,
                                         const std::vector<c10::IValue>& out) {
    for (size_t i = 0; i < out.size() && i < n->outputs().size(); ++i) record.values_[n->outputs()[i]] = out[i];
    record.node_inputs_[n] = in;
  };
  at::NoGradGuard no_grad;
  record.outputs_ = CompiledGraph(graph, TopLevelNodesOf(*graph).order).Run(std::move(inputs), &observer);
  record.stamps_ = StampsOf(*graph);
  return record;
}

GraphValues GraphValues::ForCopy(std::shared_ptr<torch::jit::Graph> copy) const {
  auto differ = [] { return Error("GraphValues::ForCopy: the graph is not an unchanged copy of the recorded one (internal error)"); };
  CheckFits(*graph_, "GraphValues::ForCopy");
  if (copy->inputs().size() != graph_->inputs().size()) throw differ();
  GraphValues record(copy);
  record.inputs_ = inputs_;
  record.outputs_ = outputs_;
  auto carry = [&](const Value* from, const Value* to) {
    auto it = values_.find(from);
    if (it != values_.end()) record.values_.emplace(to, it->second);
  };
  for (size_t i = 0; i < copy->inputs().size(); ++i) carry(graph_->inputs()[i], copy->inputs()[i]);
  auto from = graph_->nodes().begin(), to = copy->nodes().begin();
  for (; from != graph_->nodes().end() && to != copy->nodes().end(); ++from, ++to) {
    if (from->kind() != to->kind() || from->outputs().size() != to->outputs().size()) throw differ();
    for (size_t i = 0; i < to->outputs().size(); ++i) carry(from->outputs()[i], to->outputs()[i]);
    auto in = node_inputs_.find(*from);
    if (in != node_inputs_.end()) record.node_inputs_.emplace(*to, in->second);
  }
  if (from != graph_->nodes().end() || to != copy->nodes().end()) throw differ();
  record.stamps_ = StampsOf(*copy);
  return record;
}

const c10::IValue* GraphValues::Find(const Value* v) const {
  auto it = values_.find(v);
  return it == values_.end() ? nullptr : &it->second;
}

at::Tensor GraphValues::TensorOf(const Value* v) const {
  if (const c10::IValue* value = Find(v)) return value->isTensor() ? value->toTensor() : at::Tensor();
  auto constant = torch::jit::toIValue(v);
  return constant && constant->isTensor() ? constant->toTensor() : at::Tensor();
}

const std::vector<c10::IValue>* GraphValues::InputsOf(const Node* n) const {
  auto it = node_inputs_.find(n);
  return it == node_inputs_.end() ? nullptr : &it->second;
}

}  // namespace autograph
