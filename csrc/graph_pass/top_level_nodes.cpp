#include "graph_pass/top_level_nodes.h"

#include <torch/csrc/jit/ir/alias_analysis.h>
#include <torch/csrc/jit/ir/ir.h>

namespace autograph {

using torch::jit::Node;
using torch::jit::Value;

TopLevelNodes TopLevelNodesOf(torch::jit::Graph& graph) {
  TopLevelNodes nodes;
  for (Node* n : graph.block()->nodes()) {
    if (n->kind() == c10::prim::Constant) continue;
    nodes.position[n] = static_cast<int>(nodes.order.size());
    nodes.order.push_back(n);
  }
  return nodes;
}

Node* TopLevel(Node* n, const torch::jit::Block* top) {
  while (n->owningBlock() != top) n = n->owningBlock()->owningNode();
  return n;
}

void ReadValues(Node* n, std::vector<Value*>* out) {
  for (Value* v : n->inputs()) out->push_back(v);
  for (torch::jit::Block* b : n->blocks()) {
    for (Node* inner : b->nodes()) ReadValues(inner, out);
    for (Value* v : b->outputs()) out->push_back(v);
  }
}

bool WritesAnInput(const Node* node) {
  if (node->kind().is_prim()) return false;  // prim:: plumbing has vararg schemas and writes nothing
  const c10::FunctionSchema* schema = node->maybeSchema();  // aten and custom ops alike: Tensor(a!)
  return schema && schema->is_mutable();
}

bool HasOrderedSideEffects(Node* node) {
  // Raising (asserts) and warning only end or annotate the run: their order among independent
  // operators changes no result, and scripted models have asserts everywhere.
  const c10::Symbol kind = node->kind();
  if (kind != c10::prim::RaiseException && kind != c10::aten::warn && node->hasSideEffects()) return true;
  for (torch::jit::Block* b : node->blocks())
    for (Node* inner : b->nodes())
      if (HasOrderedSideEffects(inner)) return true;
  return false;
}

std::vector<std::pair<int, int>> SideEffectOrderPairs(const std::vector<Node*>& order) {
  const int n = static_cast<int>(order.size());
  std::vector<std::pair<int, int>> pairs;
  for (int b = 0; b < n; ++b) {
    if (!HasOrderedSideEffects(order[b])) continue;
    for (int i = 0; i < n; ++i)
      if (i != b) pairs.emplace_back(std::min(i, b), std::max(i, b));
  }
  return pairs;
}

std::vector<std::pair<int, int>> InPlaceOrderPairs(const std::shared_ptr<torch::jit::Graph>& graph,
                                                   const std::vector<Node*>& order) {
  const int n = static_cast<int>(order.size());
  std::vector<int> writers;
  for (int i = 0; i < n; ++i)
    if (WritesAnInput(order[i])) writers.push_back(i);
  std::vector<std::pair<int, int>> pairs;
  if (writers.empty()) return pairs;
  torch::jit::AliasDb alias_db(graph);
  for (int w : writers) {
    torch::jit::ValueSet written(order[w]->inputs().begin(), order[w]->inputs().end());
    for (int i = 0; i < n; ++i) {
      if (i == w) continue;
      std::vector<Value*> reads;
      ReadValues(order[i], &reads);
      torch::jit::ValueSet read_set(reads.begin(), reads.end());
      if (!alias_db.mayAlias(read_set, written)) continue;
      pairs.emplace_back(std::min(i, w), std::max(i, w));
    }
  }
  return pairs;
}

}  // namespace autograph
