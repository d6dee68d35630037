#pragma once
// Inspect: lower + import + statistics of a module, as a C++ struct, JSON or Graphviz.
#include <ATen/core/ivalue.h>

#include <nlohmann/json.hpp>
#include <ostream>
#include <string>
#include <vector>

#include "core/graph_statistics.h"
#include "core/op_graph.h"

namespace torch::jit {
struct Module;
}

namespace autograph {

struct Inspection {
  OpGraph graph;
  GraphStatistics statistics;
};

Inspection InspectModule(const torch::jit::Module& module, const std::vector<c10::IValue>& example_inputs);

// The keys of docs/design.md (model, operators, edges, width, critical_path_ops, critical_path_flops,
// flops, ops_by_kind) plus weight_bytes and ops_by_type.
nlohmann::json StatisticsJson(const GraphStatistics& statistics, const std::string& model);

// One box per operator (label: id, op, output shape), colored by kind.
void WriteDot(const OpGraph& graph, std::ostream& out);

}  // namespace autograph
