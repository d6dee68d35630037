#include "api/inspect.h"

#include <torch/script.h>

#include "graph_pass/import_op_graph.h"
#include "graph_pass/lower_module.h"

namespace autograph {

Inspection InspectModule(const torch::jit::Module& module, const std::vector<c10::IValue>& example_inputs) {
  OpGraph graph = ImportOpGraph(LowerModule(module), example_inputs);
  GraphStatistics statistics = ComputeStatistics(graph);
  return Inspection{std::move(graph), std::move(statistics)};
}

nlohmann::json StatisticsJson(const GraphStatistics& s, const std::string& model) {
  return nlohmann::json{{"model", model},
                        {"operators", s.operators},
                        {"edges", s.edges},
                        {"width", s.width},
                        {"critical_path_ops", s.critical_path_ops},
                        {"critical_path_flops", s.critical_path_flops},
                        {"flops", s.flops},
                        {"weight_bytes", s.weight_bytes},
                        {"ops_by_kind", s.ops_by_kind},
                        {"ops_by_type", s.ops_by_type}};
}

void WriteDot(const OpGraph& graph, std::ostream& out) {
  auto color = [](OpKind k) {
    switch (k) {
      case OpKind::ComputeBound: return "lightsalmon";
      case OpKind::MemoryBound: return "lightblue";
      case OpKind::View: return "lightgrey";
      case OpKind::ControlFlow: return "khaki";
    }
    return "white";
  };
  out << "digraph autograph {\n  node [shape=box, style=filled, fontname=\"monospace\"];\n";
  for (const OpNode& n : graph.nodes()) {
    std::string shape;
    if (!n.outputs.empty()) {
      for (size_t i = 0; i < n.outputs[0].shape.size(); ++i) shape += (i ? "x" : "") + std::to_string(n.outputs[0].shape[i]);
    }
    out << "  n" << n.id << " [label=\"" << n.id << " " << n.op << "\\n" << shape << "\", fillcolor=" << color(n.kind)
        << "];\n";
  }
  for (const OpNode& n : graph.nodes())
    for (int s : graph.succs(n.id)) out << "  n" << n.id << " -> n" << s << ";\n";
  out << "}\n";
}

}  // namespace autograph
