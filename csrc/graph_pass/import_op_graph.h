#pragma once
// Import: a lowered TorchScript graph + example inputs -> OpGraph with real shapes and costs.
#include <ATen/core/ivalue.h>

#include <memory>
#include <vector>

#include "core/op_graph.h"
#include "graph_pass/graph_values.h"

namespace autograph {

// Runs `graph` once on `example_inputs`, node by node, recording every value's real shape and dtype,
// then groups the nodes into operators: each node that launches work anchors an operator; views and
// metadata nodes join the operator that produces all their inputs, else the one that consumes all
// their outputs, else stand alone as a View operator. Edges follow data dependences plus the order
// of any in-place write that lowering could not remove. Throws InputError when the inputs do not fit.
// `outputs`, when given, receives what the graph returned on the example inputs.
OpGraph ImportOpGraph(std::shared_ptr<torch::jit::Graph> graph, const std::vector<c10::IValue>& example_inputs,
                      std::vector<c10::IValue>* outputs = nullptr);
// The same from a recorded run (no run of its own).
OpGraph ImportOpGraph(const GraphValues& values);

}  // namespace autograph
