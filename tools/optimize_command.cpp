// autograph optimize MODEL.pt -o OUT.pt [--method sequential|greedy|nimble|ios|autograph]
//                    [--cost analytical|measured] [--device cpu|cuda] [--json] ...
#include <torch/cuda.h>
#include <torch/script.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>

#include "autograph/error.h"
#include "autograph/model_loading.h"
#include "autograph/optimize.h"
#include "api/timeline_svg.h"
#include "commands.h"
#include "progress_bar.h"

namespace autograph::cli {

namespace {

struct OptimizeCommandOptions {
  std::string model, output, method = "autograph", device = "cpu";
  InputOptions inputs;
  int max_streams = 8;
  bool cuda_graph = true, json = false;
  int measure_runs = 0;
  std::string trace, timeline;
  std::string device_model, cost, cost_cache;
  int r = -1, s = 8, block = -1, verify = 3;
  int64_t block_states = -1;
  double alpha = 1.0;
  int64_t budget = 20000;
  double time_limit = -1;
  bool no_merge = false, merge_linears = true, regroup = true, fold = true, fuse_attention = true, prepack = true, pools = true, stitch = true,
       substitutions = true, check_rewrites = true;
};

// Median wall time of `runs` forward calls after `runs / 5 + 1` warm-up calls; on CUDA each call is
// followed by a device synchronize, so the time covers the kernels, not only their launch.
double MeasureMilliseconds(torch::jit::Module& module, const std::vector<c10::IValue>& inputs, int runs,
                           c10::Device device) {
  auto call = [&] {
    module.forward(inputs);
    if (device.is_cuda()) torch::cuda::synchronize();
  };
  for (int i = 0; i < runs / 5 + 1; ++i) call();
  std::vector<double> times;
  for (int i = 0; i < runs; ++i) {
    auto start = std::chrono::steady_clock::now();
    call();
    times.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
  }
  std::nth_element(times.begin(), times.begin() + times.size() / 2, times.end());
  return times[times.size() / 2];
}

void WriteTextFile(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
  out.close();
  if (!out) throw Error("cannot write '" + path + "': " + std::strerror(errno));
}

OptimizeOptions OptionsOf(const OptimizeCommandOptions& o) {
  OptimizeOptions options;
  options.executor.device = c10::Device(o.device);
  options.example_inputs = MakeExampleInputs(ResolveInputSpecs(o.model, o.inputs));  // optimize moves them
  options.search.method = o.method;
  options.search.max_streams = o.max_streams;
  options.executor.cuda_graph = o.cuda_graph;
  options.cost.device_model = o.device_model;
  options.cost.model = o.cost;
  options.cost.cache = o.cost_cache;
  if (o.r > 0) options.search.ios_r = options.search.autograph_r = o.r;  // else each method's default
  options.search.ios_s = o.s;
  options.search.max_streams = std::min(o.max_streams, o.s);
  if (o.block > 0) options.search.ios_block = options.search.block_ops = o.block;  // else each method's default
  if (o.block_states >= 0) options.search.block_states = o.block_states;
  options.search.alpha = o.alpha;
  options.search.budget = o.budget;
  options.search.time_limit = o.time_limit;
  options.search.verify = o.verify;
  options.search.merge = !o.no_merge;
  // --no-substitutions turns the six off; each has its own --no- switch. With ios and autograph,
  // sibling linears are left to the search's merge stages (unless --no-merge).
  options.substitutions.merge_linears = o.merge_linears && o.substitutions;
  options.substitutions.regroup_convolutions = o.regroup && o.substitutions;
  options.substitutions.fold_conv_relu = o.fold && o.substitutions;
  options.substitutions.fuse_attention = o.fuse_attention && o.substitutions;
  options.substitutions.prepack_onednn = o.prepack && o.substitutions;
  options.substitutions.channels_last_pools = o.pools && o.substitutions;
  options.substitutions.check_rewrites = o.check_rewrites;
  options.substitutions.stitch = o.stitch;
  return options;
}

int RunOptimize(const OptimizeCommandOptions& o) {
  torch::jit::Module module = LoadModule(o.model);
  OptimizeOptions options = OptionsOf(o);
  ProgressBar progress(o.method + " search");
  options.search.progress = [&progress](int done, int total) { progress.Update(done, total); };
  OptimizeReport report;
  torch::jit::Module optimized = optimize(module, options, &report);
  try {
    optimized.save(o.output);
  } catch (const c10::Error& e) {
    throw Error("cannot write '" + o.output + "': " + FirstLineOf(e));
  }
  nlohmann::json measured = nullptr;
  if (report.measured_ms >= 0) measured = report.measured_ms;
  if (o.measure_runs > 0) {
    std::vector<c10::IValue> inputs = InputsOn(options.example_inputs, options.executor.device);
    measured = MeasureMilliseconds(optimized, inputs, o.measure_runs, options.executor.device);
  }

  if (!o.trace.empty()) WriteTrace(optimized, InputsOn(options.example_inputs, options.executor.device),
                                   options.executor.device, o.trace);

  if (!o.timeline.empty()) {
    if (report.timeline.stages.empty())
      throw Error("no timeline to draw: " + (report.fallback.empty()
                                                  ? std::string("see the warning above")
                                                  : "optimize returned the model unchanged (" + report.fallback + ")"));
    const std::string name = std::filesystem::path(o.model).filename().string();
    WriteTextFile(o.timeline, TimelineSvg(report.timeline, name + ": " + report.method + " schedule on " + report.device));
  }

  nlohmann::json result = ReportToJson(report);
  result["model"] = o.model;
  if (!o.trace.empty()) result["trace"] = o.trace;
  if (!o.timeline.empty()) result["timeline_svg"] = o.timeline;
  result["measured_ms"] = measured;
  result["output"] = o.output;
  if (o.json) {
    std::cout << result.dump() << std::endl;
  } else {
    std::cout << "wrote " << o.output << ": " << report.method << " schedule, " << report.stages << " stages, "
              << report.groups << " groups on up to " << report.streams << " streams, " << report.operators_before
              << " operators -> " << report.operators_after << " kernels\n";
    if (!report.cost.empty())
      std::cout << "search: " << report.search_seconds << " s, " << report.states_explored << " states, "
                << report.stages_evaluated << " stages costed (" << report.cost << "), predicted "
                << report.predicted_ms << " ms\n";
    if (report.stages_measured + report.cost_cache_hits > 0)
      std::cout << "measured cost: " << report.stages_measured << " stages run, " << report.cost_cache_hits
                << " from the memo or the disk cache\n";
    for (const RewriteDecision& r : report.rewrites)
      std::cout << "rewrite " << r.name << ": " << r.changes << " change(s), "
                << (r.with_ms >= 0 ? std::to_string(r.without_ms) + " -> " + std::to_string(r.with_ms) + " ms, " : "")
                << (r.kept ? "kept" : "not kept") << "\n";
    for (const CandidateTiming& c : report.candidates)
      std::cout << "candidate " << c.name << ": " << c.measured_ms << " ms" << (c.name == report.chosen ? " (kept)" : "")
                << "\n";
    if (!measured.is_null()) std::cout << "measured: " << measured.get<double>() << " ms\n";
    if (!o.trace.empty()) std::cout << "trace of one run: " << o.trace << " (chrome://tracing or ui.perfetto.dev)\n";
    if (!o.timeline.empty()) std::cout << "timeline of the schedule: " << o.timeline << "\n";
  }
  return 0;
}

}  // namespace

Command AddOptimizeCommand(CLI::App& app) {
  auto o = std::make_shared<OptimizeCommandOptions>();
  CLI::App* cmd = app.add_subcommand("optimize", "Plan a schedule and write an optimized TorchScript module");
  cmd->add_option("model", o->model, "TorchScript file (.pt)")->required();
  cmd->add_option("-o,--output", o->output, "Where to write the optimized module")->required();
  cmd->add_option("--method", o->method, "Scheduler (default autograph; the others are baselines)")
      ->check(CLI::IsMember({"sequential", "greedy", "nimble", "ios", "autograph"}));
  cmd->add_option("--cost", o->cost, "ios, autograph: cost model (default: measured on cuda, analytical on cpu)")->check(CLI::IsMember({"analytical", "measured"}));
  cmd->add_option("--cost-cache", o->cost_cache,
                  "measured: disk cache of stage times (default ~/.cache/autograph/costs/<device>.json; none = off)");
  cmd->add_option("--device", o->device, "Device to plan and run on")->check(CLI::IsMember({"cpu", "cuda"}));
  cmd->add_option("--max-streams", o->max_streams, "Most groups (streams/threads) per stage")->check(CLI::Range(1, 64));
  cmd->add_option("--device-model", o->device_model,
                  "analytical: h100, a100, v100, cpu, or a file from autograph calibrate (.json)");
  cmd->add_option("--r", o->r, "ios, autograph: most operators per group (default 3 for ios, 4 for autograph)")
      ->check(CLI::Range(1, 64));
  cmd->add_option("--s", o->s, "ios, autograph: most groups per stage")->check(CLI::Range(1, 64));
  cmd->add_option("--block", o->block,
                  "ios, autograph: most operators per block of the dynamic program (default 24 for ios, 40 for autograph)")
      ->check(CLI::Range(1, 64));
  cmd->add_option("--block-states", o->block_states,
                  "autograph: most states (predecessor-closed subsets) per block, 0 = no bound (default 1000)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--alpha", o->alpha, "autograph: weight of the critical path in the mixed cost")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--budget", o->budget, "autograph: states per block searched with full backtracking")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--time-limit", o->time_limit,
                  "ios, autograph: seconds for the search, then blocks finish greedily (default: 60 with --cost measured, "
                  "none with analytical; 0 = none)");
  cmd->add_option("--verify", o->verify,
                  "autograph: the search's best N candidates, the one-stream and Nimble's schedules run side by side; "
                  "the fastest is kept (0: none run)")
      ->check(CLI::Range(0, 16));
  cmd->add_flag("--no-merge", o->no_merge, "ios, autograph: no merged convolution or linear stages");
  cmd->add_flag("--merge-linears,!--no-merge-linears", o->merge_linears,
                "Substitution (default on): linears that read one input (attention's Q, K, V) become one wider linear; "
                "with ios and autograph the search's merge stages decide instead");
  cmd->add_flag("--regroup-convs,!--no-regroup-convs", o->regroup,
                "Substitution (default on): grouped convolutions run with fewer groups (block-diagonal weights) where "
                "timing on the device says it pays (ResNeXt)");
  cmd->add_flag("--fold-conv-relu,!--no-fold-conv-relu", o->fold,
                "Substitution (default on, cuda): conv + relu and conv + residual add + relu become one cuDNN fused "
                "kernel");
  cmd->add_flag("--fuse-attention,!--no-fuse-attention", o->fuse_attention,
                "Substitution (default on): matmul, scale, mask add, softmax, matmul -> one scaled_dot_product_attention");
  cmd->add_flag("--prepack-onednn,!--no-prepack-onednn", o->prepack,
                "Substitution (default on, cpu): convolutions and linears run on prepacked oneDNN weights, as "
                "torch.jit.optimize_for_inference does");
  cmd->add_flag("--channels-last-pools,!--no-channels-last-pools", o->pools,
                "Substitution (default on, cpu): 2-d max / avg pooling runs on a channels-last copy of its input");
  cmd->add_flag("--substitutions,!--no-substitutions", o->substitutions,
                "All six substitutions (default on); --no-substitutions turns them all off");
  cmd->add_flag("--stitch,!--no-stitch", o->stitch,
                "Default on: memory-intensive operators (elementwise, softmax, layer norm, ...) planned into stitched "
                "kernels");
  cmd->add_flag("--check-rewrites,!--no-check-rewrites", o->check_rewrites,
                "Default on: each rewrite is timed on the whole graph and undone unless it is faster");
  cmd->add_flag("--cuda-graph,!--no-cuda-graph", o->cuda_graph,
                "Default on (cuda only): replay the multi-stream run as a CUDA Graph");
  cmd->add_option("--measure", o->measure_runs, "Time N runs of the optimized module (median ms in measured_ms)");
  cmd->add_flag("--json", o->json, "One JSON object on stdout");
  cmd->add_option("--trace", o->trace,
                  "Write a Chrome / Perfetto trace (JSON) of one run of the optimized module: each operator's "
                  "start and end on its thread or CUDA stream");
  cmd->add_option("--timeline", o->timeline,
                  "Write the kept schedule as an SVG picture: stages x streams, each operator a box as wide as "
                  "its predicted time, merged and stitched kernels marked");
  AddInputOptions(cmd, &o->inputs);
  return [o] { return RunOptimize(*o); };
}

}  // namespace autograph::cli
