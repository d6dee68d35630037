#include "executor/sequential_executor.h"

namespace autograph {

namespace {
std::vector<torch::jit::Node*> OperatorOrder(const OpGraph& graph) {
  std::vector<torch::jit::Node*> order;
  for (const OpNode& op : graph.nodes()) order.insert(order.end(), op.jit_nodes.begin(), op.jit_nodes.end());
  return order;
}
}  // namespace

SequentialExecutor::SequentialExecutor(const OpGraph& graph) : compiled_(graph.graph(), OperatorOrder(graph)) {}

}  // namespace autograph
