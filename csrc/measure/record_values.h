#pragma once
// Every value a graph computes on example inputs, by TorchScript value: what the measured cost model
// feeds a stage that it runs alone, and where stage signatures read shapes and scalars from.
#include <ATen/core/ivalue.h>

#include <unordered_map>
#include <vector>

#include "core/op_graph.h"

namespace torch::jit {
struct Value;
}

namespace autograph {

// Graph inputs and the outputs of every top-level node (constants are read from the graph).
using ValueRecord = std::unordered_map<const torch::jit::Value*, c10::IValue>;

// Runs graph.graph() once in graph order on `inputs` and keeps every value alive. A value written
// in place later in the run shows the write (same shape and dtype). Throws InputError when the
// inputs do not fit, Error when the OpGraph has no TorchScript graph.
ValueRecord RecordValues(const OpGraph& graph, std::vector<c10::IValue> inputs);

}  // namespace autograph
