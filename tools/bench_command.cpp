// autograph bench: every method side by side in one run, per zoo model, batch size and device —
// the AutoGraph paper's baselines (jit, jit_frozen, taso_jit, nimble, taso_nimble, ios, autograph)
// and our simpler schedulers. Each method's outputs are checked against jit before it is timed;
// optimized modules are cached on disk so reruns skip the searches. Writes results.csv (docs/design.md
// columns) and results.md.
#include <ATen/Context.h>
#include <torch/csrc/jit/api/module.h>
#include <torch/cuda.h>
#include <torch/script.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iomanip>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "autograph/error.h"
#include "autograph/model_loading.h"
#include "autograph/optimize.h"
#include "autograph/substitute.h"
#include "commands.h"
#include "core/operator_flops.h"
#include "executor/run_timing.h"

namespace autograph::cli {

namespace {

namespace fs = std::filesystem;

// The paper's columns, in its order; then our simpler schedulers (METHOD_graph: under a CUDA Graph).
const std::vector<std::string> kPaperMethods = {"jit", "jit_frozen", "taso_jit", "nimble", "taso_nimble", "ios", "autograph"};
const std::vector<std::string> kAllMethods = {"jit", "jit_frozen", "taso_jit", "nimble", "taso_nimble", "ios",
                                              "autograph", "sequential", "greedy", "sequential_graph", "greedy_graph",
                                              "nimble_graph", "ios_graph", "autograph_graph"};

struct BenchOptions {
  std::vector<std::string> models;
  std::string zoo = "models/zoo";
  std::string device = "cpu";
  std::vector<std::string> methods = kPaperMethods;
  std::vector<int> batches{1};
  int warmup = 50, runs = 100;
  std::string out;
  std::string cache;  // optimized modules; "" = ~/.cache/autograph/bench, "none" = off
  bool host_overhead = false;
};

struct Row {
  std::string model, method;
  int batch = 1;
  double median = 0, p10 = 0, p90 = 0, max_abs = 0, max_rel = 0, search_s = 0;
};

std::vector<at::Tensor> Outputs(const c10::IValue& v) {
  std::vector<at::Tensor> out;
  CollectTensors(v, &out);
  return out;
}

bool EndsWith(const std::string& s, const std::string& suffix) {
  return s.size() > suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// What each method is, as optimize options. jit and jit_frozen are not autograph's (see Build).
//   nimble: Nimble's stream assignment, replayed as a CUDA Graph on CUDA (as Nimble does);
//   ios: IOS's DP (r = 3, s = 8), merge and concurrent stages, no stitching;
//   autograph: optimize()'s defaults — every rewrite, each kept only where the whole graph measures
//     faster with it, AutoGraph's search, its best candidates verified on the device side by side
//     with the one-stream and Nimble schedules, CUDA Graph on CUDA; sibling linears are left to the
//     search (merged GEMM or GEMMs on streams, per candidate);
//   taso_*: our substitutions first, sibling linears merged.
// The searches rank stages by measured cost on CUDA (CUDA events, microseconds a stage). On CPU they
// use the analytical model of the CPU: measuring every stage there takes too long (IOS on rnntc_sru
// ran for many minutes on a 2-core CPU), and AutoGraph still verifies its best candidates for real.
OptimizeOptions OptionsFor(const std::string& method, const c10::Device& device) {
  OptimizeOptions o;  // the defaults are autograph's whole product; the baselines switch parts off
  o.executor.device = device;
  const bool cuda = device.is_cuda();
  std::string base = method;
  bool graph = false;
  if (EndsWith(method, "_graph")) {
    base = method.substr(0, method.size() - 6);
    graph = true;
  }
  if (base == "autograph") return o;
  const bool substitutions = base == "taso_jit" || base == "taso_nimble";
  o.substitutions.regroup_convolutions = o.substitutions.fold_conv_relu = o.substitutions.fuse_attention = o.substitutions.merge_linears = substitutions;
  o.substitutions.prepack_onednn = o.substitutions.channels_last_pools = substitutions;
  o.substitutions.stitch = false;
  o.substitutions.check_rewrites = false;  // baselines apply what they apply, unmeasured
  if (base == "taso_nimble") base = "nimble";
  // taso_jit is substitute() alone: no scheduler runs (the method field stays a valid one).
  o.search.method = base == "taso_jit" || base == "jit" || base == "jit_frozen" ? "sequential" : base;
  o.executor.cuda_graph = graph || (base == "nimble" && cuda);
  o.cost.model = cuda ? "measured" : "analytical";
  if (base == "ios") {
    o.search.ios_r = 3;
    o.search.ios_s = o.search.max_streams = 8;
  }
  return o;
}

// A file's identity for the cache: path, size and modification time.
std::string FileStamp(const std::string& path) {
  std::error_code ec;
  const auto size = fs::file_size(path, ec);
  const auto time = fs::last_write_time(path, ec).time_since_epoch().count();
  return path + ":" + std::to_string(ec ? 0 : size) + ":" + std::to_string(time);
}

std::string CacheDir(const BenchOptions& o) {
  if (o.cache == "none") return "";
  if (!o.cache.empty()) return o.cache;
  const char* home = std::getenv("HOME");
  return std::string(home ? home : ".") + "/.cache/autograph/bench";
}

// Cached optimized module of (model file, batch, device, method), keyed also by this binary: a
// rebuilt autograph never reuses a module that an older build planned.
std::string CachePath(const BenchOptions& o, const std::string& model_path, const std::string& model, int batch,
                      const std::string& method) {
  const std::string dir = CacheDir(o);
  if (dir.empty()) return "";
  const std::string key = FileStamp(model_path) + "|" + std::to_string(batch) + "|" + o.device + "|" + method + "|" +
                          FileStamp(fs::read_symlink("/proc/self/exe").string());
  std::ostringstream name;
  name << model << "-b" << batch << "-" << o.device << "-" << method << "-" << std::hex << std::hash<std::string>{}(key)
       << ".pt";
  return dir + "/" + name.str();
}

// The cache's entry at `path` (module and note) removed, with why on stderr: an entry that does not load
// back must not break this run or the next.
void DropCacheEntry(const std::string& path, const std::string& why) {
  std::error_code ec;
  fs::remove(path, ec);
  fs::remove(path + ".json", ec);
  std::cerr << "bench: not caching " << path << ": " << why << "\n";
}

// The module a method runs, and the seconds spent making it (from the cache's note when reused). A
// cached module is kept only where it loads back: TorchScript cannot load every module it saves (on a
// CPU, optimize_for_inference's oneDNN constants), and an entry damaged on disk is made anew.
torch::jit::Module Build(const std::string& method, const torch::jit::Module& module,
                         const std::vector<c10::IValue>& cpu_inputs, const c10::Device& device,
                         const std::string& cache_path, double* seconds) {
  *seconds = 0;
  if (method == "jit") return module;
  if (!cache_path.empty() && fs::exists(cache_path) && fs::exists(cache_path + ".json")) {
    try {
      *seconds = nlohmann::json::parse(std::ifstream(cache_path + ".json")).value("search_s", 0.0);
      return torch::jit::load(cache_path, device);
    } catch (const std::exception& e) {
      DropCacheEntry(cache_path, "it does not load (" + FirstLineOf(e) + "); made anew");
    }
  }
  const auto start = std::chrono::steady_clock::now();
  torch::jit::Module built;
  if (method == "jit_frozen") {
    torch::jit::Module copy = module.clone();
    copy.eval();
    built = torch::jit::optimize_for_inference(copy);
  } else {
    OptimizeOptions options = OptionsFor(method, device);
    options.example_inputs = cpu_inputs;
    built = method == "taso_jit" ? substitute(module, options) : optimize(module, options);
  }
  *seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (!cache_path.empty()) {
    fs::create_directories(fs::path(cache_path).parent_path());
    try {
      built.save(cache_path);
      torch::jit::load(cache_path, device);
      std::ofstream(cache_path + ".json") << nlohmann::json{{"search_s", *seconds}, {"method", method}}.dump();
    } catch (const std::exception& e) {
      DropCacheEntry(cache_path, "the saved module does not load back (" + FirstLineOf(e) + ")");
    }
  }
  return built;
}

std::string Markdown(const BenchOptions& o, const std::vector<Row>& rows, const std::string& device) {
  std::ostringstream md;
  for (int batch : o.batches) {
    md << "\n### batch " << batch << ", " << device << "\n\n| model |";
    for (const auto& m : o.methods) md << " " << m << " |";
    md << "\n|---|";
    for (size_t i = 0; i < o.methods.size(); ++i) md << "---:|";
    md << "\n";
    for (const std::string& name : o.models) {
      std::map<std::string, const Row*> by_method;
      double jit = 0, best = 1e300;
      for (const Row& r : rows)
        if (r.model == name && r.batch == batch) {
          by_method[r.method] = &r;
          if (r.method == "jit") jit = r.median;
          best = std::min(best, r.median);
        }
      md << "| " << name << " |";
      for (const std::string& m : o.methods) {
        auto it = by_method.find(m);
        if (it == by_method.end()) {
          md << " – |";
          continue;
        }
        const Row& r = *it->second;
        std::ostringstream cell;
        cell << std::fixed << std::setprecision(3) << r.median;
        if (jit > 0 && r.method != "jit") cell << " (" << std::setprecision(2) << jit / r.median << "×)";
        md << " " << (r.median == best ? "**" + cell.str() + "**" : cell.str()) << " |";
      }
      md << "\n";
    }
  }
  md << "\nMedian ms over " << o.runs << " runs after " << o.warmup << " warm-up runs on " << device
     << " (CUDA events on GPU), the methods of a model timed side by side, round-robin; (n×) is the speedup over "
        "jit; search and optimization time not included.\n";
  return md.str();
}

// The largest absolute error of a method's outputs against the reference's, and that error over the
// reference's largest magnitude (its scale), into the row. Throws Error when the outputs do not match up.
void CompareOutputs(const std::vector<at::Tensor>& got, const std::vector<at::Tensor>& reference, Row* row) {
  if (got.size() != reference.size())
    throw Error("gives " + std::to_string(got.size()) + " output tensors, jit " + std::to_string(reference.size()));
  for (size_t i = 0; i < got.size(); ++i) {
    const double abs = (got[i].to(at::kDouble) - reference[i].to(at::kDouble)).abs().max().item<double>();
    const double scale = reference[i].abs().max().item<double>();
    row->max_abs = std::max(row->max_abs, abs);
    row->max_rel = std::max(row->max_rel, scale > 0 ? abs / scale : abs);
  }
}

std::string Csv(const std::vector<Row>& rows, const std::string& device) {
  std::ostringstream csv;
  csv << "model,batch,device,method,median_ms,p10_ms,p90_ms,max_abs_err,max_rel_err,search_s\n";
  for (const Row& r : rows) {
    csv << r.model << "," << r.batch << "," << device << "," << r.method << "," << r.median << "," << r.p10 << ","
        << r.p90 << "," << r.max_abs << "," << r.max_rel << "," << r.search_s << "\n";
  }
  return csv.str();
}

int RunBench(const BenchOptions& o) {
  c10::Device device(o.device);
  const bool cuda = device.is_cuda();
  if (cuda && !at::hasCUDA()) throw Error("--device cuda asked for, but no CUDA device is available here");
  if (o.host_overhead) {
    std::string table = MeasureHostOverhead();
    if (!o.out.empty()) {
      fs::create_directories(o.out);
      std::ofstream(o.out + "/host_overhead.md") << table;
    }
    std::cout << table;
    if (o.models.empty()) return 0;
  }
  if (o.models.empty()) throw InputError("name at least one model (e.g. resnet50), found as ZOO/NAME.pt");
  std::vector<Row> rows;
  int failures = 0;
  torch::NoGradGuard no_grad;
  for (const std::string& name : o.models) {
    const std::string path = o.zoo + "/" + name + ".pt";
    torch::jit::Module module = LoadModule(path);
    module.eval();
    module.to(device);
    const auto model_specs = ReadInputSpecs(*InputSpecPathFor(path));
    for (int batch : o.batches) {
      auto specs = model_specs;
      ForEachTensorSpec(specs, [&](InputSpec& s) { if (!s.shape.empty()) s.shape[0] = batch; });
      std::vector<c10::IValue> cpu_inputs = MakeExampleInputs(specs);
      std::vector<c10::IValue> inputs = InputsOn(cpu_inputs, device);
      auto reference = Outputs(module.forward(inputs));

      // Build and check every method first, then time them all side by side, round-robin, so that
      // the machine's drifts (clock, other load: large on a shared VM) fall on every method alike.
      std::vector<Row> built;
      std::vector<torch::jit::Module> runnables;
      for (const std::string& method : o.methods) {
        Row row{name, method, batch};
        try {
          torch::jit::Module runnable =
              Build(method, module, cpu_inputs, device, CachePath(o, path, name, batch, method), &row.search_s);
          CompareOutputs(Outputs(runnable.forward(inputs)), reference, &row);
          built.push_back(row);
          runnables.push_back(runnable);
        } catch (const std::exception& e) {
          // One method failing (a model it cannot handle) must not lose the rest of a long run.
          ++failures;
          std::cerr << "bench: " << name << " batch " << batch << " " << method << " failed: " << FirstLineOf(e) << "\n";
        }
      }
      std::vector<std::function<void()>> runs;
      for (auto& runnable : runnables) runs.push_back([&runnable, &inputs] { runnable.forward(inputs); });
      const auto samples = runs.empty() ? std::vector<std::vector<double>>{}
                                        : TimeRunsSideBySide(device, o.warmup, o.runs, runs);
      for (size_t m = 0; m < built.size(); ++m) {
        Row& row = built[m];
        row.median = PercentileMs(samples[m], 0.5);
        row.p10 = PercentileMs(samples[m], 0.1);
        row.p90 = PercentileMs(samples[m], 0.9);
        std::cerr << std::left << std::setw(18) << name << std::setw(4) << batch << std::setw(18) << row.method
                  << std::fixed << std::setprecision(3) << row.median << " ms (p10 " << row.p10 << ", p90 " << row.p90
                  << "), max rel err " << std::scientific << row.max_rel << std::defaultfloat << ", built in "
                  << row.search_s << " s\n";
        rows.push_back(row);
      }
    }
  }

  const std::string md = Markdown(o, rows, device.str());
  if (!o.out.empty()) {
    fs::create_directories(o.out);
    std::ofstream(o.out + "/results.csv") << Csv(rows, device.str());
    std::ofstream(o.out + "/results.md") << md;
  }
  std::cout << md;
  if (failures > 0) std::cerr << "bench: " << failures << " method run(s) failed; see above\n";
  return failures > 0 ? 1 : 0;
}

}  // namespace

Command AddBenchCommand(CLI::App& app) {
  auto o = std::make_shared<BenchOptions>();
  CLI::App* cmd = app.add_subcommand("bench", "Latency of every method (the paper's baselines and autograph) on zoo models, side by side");
  cmd->add_option("models", o->models, "Zoo model names");
  cmd->add_flag("--host-overhead", o->host_overhead, "Measure the host time each executor adds per operator");
  cmd->add_option("--zoo", o->zoo, "Directory of NAME.pt and NAME.json");
  cmd->add_option("--device", o->device, "cpu, cuda or cuda:N")->check([](const std::string& text) -> std::string {
    try {
      const c10::Device device(text);
      return device.is_cpu() || device.is_cuda() ? "" : "not cpu, cuda or cuda:N";
    } catch (const c10::Error&) {
      return "not a device (cpu, cuda or cuda:N)";
    }
  });
  cmd->add_option("--methods", o->methods,
                  "Default: the paper's jit jit_frozen taso_jit nimble taso_nimble ios autograph; also sequential, "
                  "greedy, and METHOD_graph under a CUDA Graph")
      ->check(CLI::IsMember(kAllMethods));
  cmd->add_option("--batch", o->batches, "Batch sizes (e.g. --batch 1 16 32)")->check(CLI::PositiveNumber);
  cmd->add_option("--warmup", o->warmup, "Warm-up runs (default 50)")->check(CLI::NonNegativeNumber);
  cmd->add_option("--runs", o->runs, "Timed runs (default 100)")->check(CLI::PositiveNumber);
  cmd->add_option("--out", o->out, "Directory for results.csv and results.md");
  cmd->add_option("--cache", o->cache,
                  "Directory of optimized modules reused by reruns (default ~/.cache/autograph/bench; none = off)");
  return [o] { return RunBench(*o); };
}

}  // namespace autograph::cli
