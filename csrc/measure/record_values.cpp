// Recording every value of one run of a graph; see record_values.h.
#include "measure/record_values.h"

#include <torch/csrc/jit/ir/ir.h>

#include "autograph/error.h"

namespace autograph {

ValueRecord RecordValues(const OpGraph& graph, std::vector<c10::IValue> inputs) {
  const auto& jit_graph = graph.graph();
  if (!jit_graph) throw Error("recording values needs an OpGraph imported from a TorchScript graph (ImportOpGraph)");
  return GraphValues::Record(jit_graph, std::move(inputs)).values();  // InputError when they do not fit
}

}  // namespace autograph
