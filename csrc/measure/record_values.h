#pragma once
// Every value a graph computes on example inputs: what the measured cost model feeds a stage that it
// runs alone, and where stage signatures read shapes and scalars from. A TorchScript graph's values
// are keyed by TorchScript value; an exported program's (AtenGraph) by value id.
#include <ATen/core/ivalue.h>

#include <unordered_map>
#include <vector>

#include "core/op_graph.h"
#include "graph_pass/graph_values.h"  // ValueRecord

namespace torch::jit {
struct Value;
}

namespace autograph {

// Runs graph.graph() once in graph order on `inputs` and keeps every value alive (GraphValues::Record:
// the driver records once and passes GraphValues::values() instead). A value written
// in place later in the run shows the write (same shape and dtype). Throws InputError when the
// inputs do not fit, Error when the OpGraph has no TorchScript graph.
ValueRecord RecordValues(const OpGraph& graph, std::vector<c10::IValue> inputs);

// An AtenGraph's values by id (None where a value was not computed).
using AtenValueRecord = std::vector<c10::IValue>;

// Runs graph.aten_graph() once in its node order on `inputs` (its placeholders: weights, then the
// user's tensors) and keeps every value. Throws InputError when the inputs do not fit, Error when
// the OpGraph has no AtenGraph.
AtenValueRecord RecordAtenValues(const OpGraph& graph, std::vector<c10::IValue> inputs);

}  // namespace autograph
