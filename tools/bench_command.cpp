// autograph bench: latency of the TorchScript module as loaded vs autograph's schedules, side by
// side in one run, on one device. Writes results.csv (DESIGN.md §6 columns) and results.md.
#include <ATen/Context.h>
#include <torch/cuda.h>
#include <torch/script.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "autograph/error.h"
#include "autograph/model_loading.h"
#include "autograph/operator_flops.h"
#include "autograph/optimize.h"
#include "commands.h"

namespace autograph::cli {

namespace {

struct BenchOptions {
  std::vector<std::string> models;
  std::string zoo = "models/zoo";
  std::string device = "cpu";
  std::vector<std::string> methods{"jit", "sequential", "greedy"};
  int batch = 1;
  int warmup = 10, runs = 50;
  std::string out;
  bool host_overhead = false;
};

struct Row {
  std::string model, method;
  double median = 0, p10 = 0, p90 = 0, max_abs = 0, max_rel = 0, search_s = 0;
  int stages = 0, streams = 0;
};

double Percentile(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  double pos = q * (v.size() - 1);
  size_t lo = static_cast<size_t>(pos);
  size_t hi = std::min(lo + 1, v.size() - 1);
  return v[lo] + (pos - lo) * (v[hi] - v[lo]);
}

std::vector<at::Tensor> Outputs(const c10::IValue& v) {
  std::vector<at::Tensor> out;
  CollectTensors(v, &out);
  return out;
}

// Wall time per call; on CUDA the device is synchronized after each call, so a time covers the
// kernels as well as their launches.
std::vector<double> Time(torch::jit::Module& m, const std::vector<c10::IValue>& inputs, const BenchOptions& o,
                         bool cuda) {
  for (int i = 0; i < o.warmup; ++i) m.forward(inputs);
  if (cuda) torch::cuda::synchronize();
  std::vector<double> ms;
  for (int i = 0; i < o.runs; ++i) {
    auto start = std::chrono::steady_clock::now();
    m.forward(inputs);
    if (cuda) torch::cuda::synchronize();
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
  }
  return ms;
}

int RunBench(const BenchOptions& o) {
  c10::Device device(o.device);
  const bool cuda = device.is_cuda();
  if (cuda && !at::hasCUDA()) throw Error("--device cuda asked for, but no CUDA device is available here");
  if (o.host_overhead) {
    std::string table = MeasureHostOverhead();
    if (!o.out.empty()) {
      std::filesystem::create_directories(o.out);
      std::ofstream(o.out + "/host_overhead.md") << table;
    }
    std::cout << table;
    if (o.models.empty()) return 0;
  }
  if (o.models.empty()) throw InputError("name at least one model (e.g. resnet50), found as ZOO/NAME.pt");
  std::vector<Row> rows;
  torch::NoGradGuard no_grad;
  for (const std::string& name : o.models) {
    const std::string path = o.zoo + "/" + name + ".pt";
    torch::jit::Module module = LoadModule(path);
    module.eval();
    module.to(device);
    auto specs = ReadInputSpecs(*InputSpecPathFor(path));
    for (auto& s : specs) s.shape[0] = o.batch;
    std::vector<c10::IValue> cpu_inputs = MakeExampleInputs(specs);
    std::vector<c10::IValue> inputs;
    for (const auto& v : cpu_inputs) inputs.push_back(v.toTensor().to(device));
    auto reference = Outputs(module.forward(inputs));

    for (const std::string& method : o.methods) {
      Row row{name, method};
      torch::jit::Module runnable = module;
      if (method != "jit") {
        OptimizeOptions options;
        options.example_inputs = cpu_inputs;
        options.device = device;
        const std::string suffix = "_graph";  // METHOD_graph: the same schedule under a CUDA Graph
        options.cuda_graph = method.size() > suffix.size() && method.compare(method.size() - suffix.size(), suffix.size(), suffix) == 0;
        options.method = options.cuda_graph ? method.substr(0, method.size() - suffix.size()) : method;
        OptimizeReport report;
        auto start = std::chrono::steady_clock::now();
        runnable = optimize(module, options, &report);
        row.search_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        row.stages = report.stages;
        row.streams = report.streams;
      }
      auto got = Outputs(runnable.forward(inputs));
      for (size_t i = 0; i < got.size() && i < reference.size(); ++i) {
        double abs = (got[i] - reference[i]).abs().max().item<double>();
        double scale = reference[i].abs().max().item<double>();
        row.max_abs = std::max(row.max_abs, abs);
        row.max_rel = std::max(row.max_rel, scale > 0 ? abs / scale : abs);
      }
      auto ms = Time(runnable, inputs, o, cuda);
      row.median = Percentile(ms, 0.5);
      row.p10 = Percentile(ms, 0.1);
      row.p90 = Percentile(ms, 0.9);
      std::cerr << std::left << std::setw(18) << name << std::setw(20) << method << std::fixed << std::setprecision(3)
                << row.median << " ms (p10 " << row.p10 << ", p90 " << row.p90 << "), max rel err " << std::scientific
                << row.max_rel << std::defaultfloat << "\n";
      rows.push_back(row);
    }
  }

  std::ostringstream csv, md;
  csv << "model,batch,device,method,median_ms,p10_ms,p90_ms,max_abs_err,max_rel_err,search_s\n";
  for (const Row& r : rows) {
    csv << r.model << "," << o.batch << "," << device.str() << "," << r.method << "," << r.median << "," << r.p10 << ","
        << r.p90 << "," << r.max_abs << "," << r.max_rel << "," << r.search_s << "\n";
  }
  md << "| model |";
  for (const auto& m : o.methods) md << " " << m << " |";
  md << "\n|---|";
  for (size_t i = 0; i < o.methods.size(); ++i) md << "---:|";
  md << "\n";
  for (const std::string& name : o.models) {
    double jit = 0, best = 1e300;
    for (const Row& r : rows)
      if (r.model == name) {
        if (r.method == "jit") jit = r.median;
        best = std::min(best, r.median);
      }
    md << "| " << name << " |";
    for (const Row& r : rows) {
      if (r.model != name) continue;
      std::ostringstream cell;
      cell << std::fixed << std::setprecision(3) << r.median;
      if (jit > 0 && r.method != "jit") cell << " (" << std::setprecision(2) << jit / r.median << "×)";
      md << " " << (r.median == best ? "**" + cell.str() + "**" : cell.str()) << " |";
    }
    md << "\n";
  }
  md << "\nMedian ms over " << o.runs << " runs after " << o.warmup << " warm-up runs, batch " << o.batch << ", "
     << device.str() << "; (n×) is the speedup over jit.\n";
  if (!o.out.empty()) {
    std::filesystem::create_directories(o.out);
    std::ofstream(o.out + "/results.csv") << csv.str();
    std::ofstream(o.out + "/results.md") << md.str();
  }
  std::cout << md.str();
  return 0;
}

}  // namespace

Command AddBenchCommand(CLI::App& app) {
  auto o = std::make_shared<BenchOptions>();
  CLI::App* cmd = app.add_subcommand("bench", "Latency of jit vs autograph schedules on zoo models, side by side");
  cmd->add_option("models", o->models, "Zoo model names");
  cmd->add_flag("--host-overhead", o->host_overhead, "Measure the host time each executor adds per operator");
  cmd->add_option("--zoo", o->zoo, "Directory of NAME.pt and NAME.json");
  cmd->add_option("--device", o->device, "cpu or cuda")->check(CLI::IsMember({"cpu", "cuda"}));
  cmd->add_option("--methods", o->methods,
                  "jit sequential greedy nimble ios autograph, and METHOD_graph under a CUDA Graph")
      ->check(CLI::IsMember({"jit", "sequential", "greedy", "nimble", "ios", "autograph", "sequential_graph",
                             "greedy_graph", "nimble_graph", "ios_graph", "autograph_graph"}));
  cmd->add_option("--batch", o->batch, "Batch size")->check(CLI::PositiveNumber);
  cmd->add_option("--warmup", o->warmup, "Warm-up runs")->check(CLI::NonNegativeNumber);
  cmd->add_option("--runs", o->runs, "Timed runs")->check(CLI::PositiveNumber);
  cmd->add_option("--out", o->out, "Directory for results.csv and results.md");
  return [o] { return RunBench(*o); };
}

}  // namespace autograph::cli
