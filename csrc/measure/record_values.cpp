// Recording every value of one run of a graph; see record_values.h.
#include "measure/record_values.h"

#include <torch/csrc/jit/ir/ir.h>

#include <numeric>

#include "autograph/error.h"
#include "core/aten_graph.h"
#include "executor/compiled_graph.h"

namespace autograph {

ValueRecord RecordValues(const OpGraph& graph, std::vector<c10::IValue> inputs) {
  const auto& jit_graph = graph.graph();
  if (!jit_graph) throw Error("recording values needs an OpGraph imported from a TorchScript graph (ImportOpGraph)");
  return GraphValues::Record(jit_graph, std::move(inputs)).values();  // InputError when they do not fit
}

AtenValueRecord RecordAtenValues(const OpGraph& graph, std::vector<c10::IValue> inputs) {
  const auto& aten = graph.aten_graph();
  if (!aten) throw Error("recording ATen values needs an OpGraph imported from an exported program (ImportAtenGraph)");
  std::vector<int> order(aten->nodes.size());
  std::iota(order.begin(), order.end(), 0);
  const CompiledGraph compiled(aten, order);
  CompiledGraph::Table table = compiled.NewTable(std::move(inputs));  // InputError: wrong count
  torch::jit::Stack stack;
  for (size_t step = 0; step < compiled.num_steps(); ++step) compiled.RunStep(step, table, stack);  // value ids are slots
  return table;
}

}  // namespace autograph
