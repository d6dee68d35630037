// autograph inspect MODEL.pt [--input-shape 1,3,224,224 ...] [--dtype float32 ...] [--json] [--dot FILE]
#include <torch/script.h>

#include <cstdio>
#include <fstream>
#include <iostream>

#include "autograph/error.h"
#include "api/inspect.h"
#include "autograph/model_loading.h"
#include "commands.h"

namespace autograph::cli {

namespace {

struct InspectOptions {
  std::string model;
  InputOptions inputs;
  bool json = false;
  std::string dot;
};

std::string Human(double x) {
  const char* units[] = {"", "K", "M", "G", "T"};
  int u = 0;
  while (x >= 1000 && u < 4) x /= 1000, ++u;
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g%s", x, units[u]);
  return buf;
}

int RunInspect(const InspectOptions& o) {
  torch::jit::Module module = LoadModule(o.model);
  auto inputs = MakeExampleInputs(ResolveInputSpecs(o.model, o.inputs));
  Inspection inspection = InspectModule(module, inputs);
  const GraphStatistics& s = inspection.statistics;
  if (!o.dot.empty()) {
    std::ofstream out(o.dot);
    if (!out) throw Error("cannot write --dot file '" + o.dot + "'");
    WriteDot(inspection.graph, out);
  }
  if (o.json) {
    std::cout << StatisticsJson(s, o.model).dump() << std::endl;
    return 0;
  }
  std::cout << "model              " << o.model << "\n"
            << "operators          " << s.operators << "\n"
            << "edges              " << s.edges << "\n"
            << "width              " << s.width << "\n"
            << "critical path      " << s.critical_path_ops << " ops, " << Human(s.critical_path_flops) << "FLOP\n"
            << "FLOPs              " << Human(s.flops) << " (" << Human(s.flops / 2) << " MAC)\n"
            << "weights            " << Human(static_cast<double>(s.weight_bytes)) << "B\n"
            << "by kind           ";
  for (const auto& [kind, count] : s.ops_by_kind) std::cout << " " << kind << "=" << count;
  std::cout << "\n";
  return 0;
}

}  // namespace

Command AddInspectCommand(CLI::App& app) {
  auto options = std::make_shared<InspectOptions>();
  CLI::App* cmd = app.add_subcommand("inspect", "Import a TorchScript model and print its operator-graph statistics");
  cmd->add_option("model", options->model, "TorchScript file (.pt)")->required();
  AddInputOptions(cmd, &options->inputs);
  cmd->add_flag("--json", options->json, "One JSON object on stdout");
  cmd->add_option("--dot", options->dot, "Write the operator graph in Graphviz format to FILE");
  return [options] { return RunInspect(*options); };
}

}  // namespace autograph::cli
