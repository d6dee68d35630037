#pragma once
// PlanOtherShapes: a schedule for each of OptimizeOptions::shapes besides the example inputs' own, added
// to the program, which runs each call on the plan for its shapes (or the nearest).
#include <torch/csrc/jit/ir/ir.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "autograph/optimize.h"
#include "core/op_graph.h"
#include "executor/program.h"

namespace autograph {

// `example`: the inputs `graph` was imported and planned with (on options.executor.device). For each
// shape of options.shapes, inputs of that shape (the example's values tiled or cut to it), one recorded
// run of `lowered` on them, the graph imported from it and planned by options' method and cost; the
// schedule goes to `program` and a line to report->shape_plans. A shape at which `lowered` imports
// other operators (structure that depends on sizes) keeps the example's plan, and its line says why.
// Throws InputError when a shape lists another number of tensors or other ranks than the example.
void PlanOtherShapes(const std::shared_ptr<torch::jit::Graph>& lowered, const std::vector<c10::IValue>& example,
                     const OpGraph& graph, const OptimizeOptions& options, Program* program, OptimizeReport* report);

// The ShapePlanner of Program::PlanNewShapes (registered when this library loads): what PlanOtherShapes
// does for one shape, at a call with `arguments`, by `options` (OptimizeOptionsToJson text); nullopt
// when `graph`'s lowered graph imports other operators at these shapes.
std::optional<Schedule> PlanNewShape(const OpGraph& graph, const std::vector<c10::IValue>& arguments,
                                     const std::string& options);

// The example's tensors tiled (repeated) or cut along each dimension to `shapes` (one per tensor, in
// the order InputSignaturesOf lists them), values kept in the example's range (indices stay valid).
std::vector<c10::IValue> ResizedInputs(const std::vector<c10::IValue>& example,
                                       const std::vector<std::vector<int64_t>>& shapes);

}  // namespace autograph
