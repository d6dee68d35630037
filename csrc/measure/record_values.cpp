// Recording every value of one run of a graph; see record_values.h.
#include "measure/record_values.h"

#include <torch/csrc/jit/ir/ir.h>

#include "autograph/error.h"
#include "executor/compiled_graph.h"

namespace autograph {

ValueRecord RecordValues(const OpGraph& graph, std::vector<c10::IValue> inputs) {
  const auto& jit_graph = graph.graph();
  if (!jit_graph) throw Error("recording values needs an OpGraph imported from a TorchScript graph (ImportOpGraph)");
  ValueRecord values;
  for (size_t i = 0; i < inputs.size() && i < jit_graph->inputs().size(); ++i)
    values[jit_graph->inputs()[i]] = inputs[i];
  std::vector<torch::jit::Node*> order;
  for (torch::jit::Node* n : jit_graph->nodes())
    if (n->kind() != c10::prim::Constant) order.push_back(n);
  CompiledGraph::Observer observer = [&](const torch::jit::Node* n, const std::vector<c10::IValue>&,
                                         const std::vector<c10::IValue>& outputs) {
    for (size_t i = 0; i < outputs.size() && i < n->outputs().size(); ++i) values[n->outputs()[i]] = outputs[i];
  };
  CompiledGraph(jit_graph, order).Run(std::move(inputs), &observer);  // InputError when they do not fit
  return values;
}

}  // namespace autograph
