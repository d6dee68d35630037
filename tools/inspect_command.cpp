// autograph inspect MODEL.pt [--input-shape 1,3,224,224 ...] [--dtype float32 ...] [--json] [--dot FILE]
#include <torch/script.h>

#include <cstdio>
#include <fstream>
#include <iostream>

#include "autograph/error.h"
#include "autograph/inspect.h"
#include "autograph/model_loading.h"
#include "commands.h"

namespace autograph::cli {

namespace {

struct InspectOptions {
  std::string model;
  std::vector<std::string> shapes;
  std::vector<std::string> dtypes;
  bool json = false;
  std::string dot;
};

std::vector<InputSpec> ResolveInputs(const InspectOptions& o) {
  if (o.shapes.empty()) {
    auto spec_path = InputSpecPathFor(o.model);
    if (!spec_path) {
      throw InputError("no example input shapes for '" + o.model +
                       "': pass --input-shape once per forward() argument (e.g. --input-shape 1,3,224,224), "
                       "or put NAME.json beside the model");
    }
    return ReadInputSpecs(*spec_path);
  }
  if (!o.dtypes.empty() && o.dtypes.size() != o.shapes.size()) {
    throw InputError("got " + std::to_string(o.shapes.size()) + " --input-shape but " + std::to_string(o.dtypes.size()) +
                     " --dtype; give one dtype per input or none (float32)");
  }
  std::vector<InputSpec> specs;
  for (size_t i = 0; i < o.shapes.size(); ++i) {
    InputSpec spec;
    spec.shape = ParseShape(o.shapes[i]);
    if (!o.dtypes.empty()) spec.dtype = ParseDtype(o.dtypes[i]);
    specs.push_back(spec);
  }
  return specs;
}

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
  auto inputs = MakeExampleInputs(ResolveInputs(o));
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
  cmd->add_option("--input-shape", options->shapes,
                  "Shape of one forward() argument, e.g. 1,3,224,224; repeat per argument (default: NAME.json)");
  cmd->add_option("--dtype", options->dtypes, "dtype per --input-shape (float32, int64, ...)");
  cmd->add_flag("--json", options->json, "One JSON object on stdout");
  cmd->add_option("--dot", options->dot, "Write the operator graph in Graphviz format to FILE");
  return [options] { return RunInspect(*options); };
}

}  // namespace autograph::cli
