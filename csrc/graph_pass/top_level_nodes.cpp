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
  if (!node->kind().is_aten()) return false;  // prim:: plumbing has vararg schemas and writes nothing
  const c10::FunctionSchema* schema = node->maybeSchema();
  return schema && schema->is_mutable();
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
