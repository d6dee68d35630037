#include "api/apply_rewrites.h"

#include "api/plan_schedule.h"

#include <torch/csrc/jit/ir/ir.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <functional>
#include <optional>
#include <string>

#include "executor/run_timing.h"
#include "executor/stage_executor.h"
#include "graph_pass/choose_lowered_operators.h"
#include "graph_pass/fold_convolution_add_relu.h"
#include "graph_pass/fuse_attention.h"
#include "graph_pass/import_op_graph.h"
#include "graph_pass/lower_precision.h"
#include "graph_pass/merge_sibling_linears.h"
#include "graph_pass/pack_constant_linears.h"
#include "graph_pass/pool_in_channels_last.h"
#include "graph_pass/prepack_for_onednn.h"
#include "graph_pass/regroup_grouped_convolutions.h"
#include "graph_pass/stitch_memory_bound_ops.h"
#include "search/cost/device_model.h"
#include "search/nimble_schedule.h"
#include "search/simple_schedulers.h"

namespace autograph {

namespace {

using GraphPtr = std::shared_ptr<torch::jit::Graph>;

// What a rewrite did: `changes` decides whether there is anything to time; `absorbed` is the
// operators folded or stitched away (report only).
struct RewriteOutcome {
  int changes = 0;
  int absorbed = 0;
  int rejected = 0;  // parts the pass measured slower and left out (stitch groups)
};

struct RewriteStep {
  std::string name;
  bool substitution;  // one of the graph substitutions that substitute() runs too
  // The graph and the record of its run on the example inputs (which the rewrite may leave stale).
  std::function<RewriteOutcome(GraphPtr&, const GraphValues&)> apply;
  std::function<void(const RewriteOutcome&, OptimizeReport*)> count;  // into the report, when kept
  bool timed = true;  // with check_rewrites, kept only where the graph measures faster with it
  bool pattern = false;  // finds operators by their pattern, whatever their dtype (RewriteSet::Patterns)
};

bool InSet(const RewriteStep& step, RewriteSet set) {
  switch (set) {
    case RewriteSet::All: return true;
    case RewriteSet::Substitutions: return step.substitution;
    case RewriteSet::Patterns: return step.pattern;
    case RewriteSet::AfterPatterns: return !step.pattern;
  }
  return true;
}


int CountAtenNodes(const torch::jit::Graph& graph) {
  int n = 0;
  for (const torch::jit::Node* node : graph.nodes()) n += node->kind().is_aten();
  return n;
}

std::vector<RewriteStep> RewriteSteps(const OptimizeOptions& options, bool searched, LoweringRequest* lowering) {
  std::vector<RewriteStep> steps;
  if (options.substitutions.fuse_attention)
    steps.push_back({"fuse_attention", true, [](GraphPtr& g, const GraphValues& v) { return RewriteOutcome{FuseScaledDotProductAttention(g, v)}; },
                     [](const RewriteOutcome& o, OptimizeReport* r) { r->attentions_fused += o.changes; }, true, true});
  if (options.substitutions.merge_linears && !(searched && options.search.merge))
    steps.push_back({"merge_linears", true, [](GraphPtr& g, const GraphValues&) { return RewriteOutcome{MergeSiblingLinears(g)}; },
                     [](const RewriteOutcome& o, OptimizeReport* r) { r->linears_merged += o.changes; }, true, true});
  if (options.substitutions.regroup_convolutions)
    steps.push_back({"regroup_convolutions", true,
                     [&](GraphPtr& g, const GraphValues& v) {
                       RegroupOptions regroup;
                       if (options.substitutions.check_rewrites) regroup.keep_graph_below = 0;  // the driver checks the graph
                       return RewriteOutcome{RegroupGroupedConvolutions(g, v, regroup).regrouped};
                     },
                     [](const RewriteOutcome& o, OptimizeReport* r) { r->convolutions_regrouped += o.changes; }, true, true});
  // After the rewrites that find operators by their pattern (attention, sibling linears, grouped
  // convolutions), before those that pick kernels for a dtype (cuDNN's fused convolutions, oneDNN's
  // packed weights) and stitching, which then see the casts. Not timed here: the operators are chosen for
  // accuracy (ChooseLoweredOperators), and the whole plan is judged against the float32 plan, for
  // accuracy and time (ChoosePrecision). Rejected: operators left in float32.
  if (lowering)
    steps.push_back({"lower_precision", false,
                     [lowering](GraphPtr& g, const GraphValues& v) {
                       ChooseLoweredOperators(v, lowering);
                       const int lowered = LowerMatmulsAndConvolutions(g, v, lowering->dtype, &lowering->chosen);
                       return RewriteOutcome{lowered, 0, lowering->lowerable - lowered};
                     },
                     [](const RewriteOutcome& o, OptimizeReport* r) { r->ops_lowered += o.changes; }, false});
  if (options.substitutions.fold_conv_relu && options.executor.device.is_cuda())  // cuDNN's fused kernel: no CPU counterpart
    steps.push_back({"fold_conv_relu", true,
                     [](GraphPtr& g, const GraphValues& v) {
                       const int before = CountAtenNodes(*g);
                       RewriteOutcome o{FoldConvolutionAddRelu(g, v)};
                       o.absorbed = before - CountAtenNodes(*g);
                       return o;
                     },
                     [](const RewriteOutcome& o, OptimizeReport* r) {
                       r->convolutions_folded += o.changes;
                       r->ops_folded += o.absorbed;
                     }});
  if (options.substitutions.prepack_onednn && options.executor.device.is_cpu())  // MKL's or oneDNN's packed GEMM
    steps.push_back({"pack_linears", false, [](GraphPtr& g, const GraphValues&) { return RewriteOutcome{PackConstantLinears(g)}; },
                     [](const RewriteOutcome& o, OptimizeReport* r) { r->ops_prepacked += o.changes; }});
  if (options.substitutions.prepack_onednn && options.executor.device.is_cpu())  // oneDNN's CPU kernels
    steps.push_back({"prepack_onednn", false, [](GraphPtr& g, const GraphValues&) { return RewriteOutcome{PrepackForOneDnn(g)}; },
                     [](const RewriteOutcome& o, OptimizeReport* r) { r->ops_prepacked += o.changes; }});
  if (options.substitutions.channels_last_pools && options.executor.device.is_cpu())  // ATen's CPU pooling kernels
    steps.push_back({"channels_last_pools", false, [](GraphPtr& g, const GraphValues& v) { return RewriteOutcome{PoolInChannelsLast(g, v)}; },
                     [](const RewriteOutcome& o, OptimizeReport* r) { r->pools_channels_last += o.changes; }});
  if (options.substitutions.stitch)
    steps.push_back({"stitch", false,
                     [&](GraphPtr& g, const GraphValues& v) {
                       // Checked: each planned group is first timed against its operators on the
                       // device, and only faster ones are stitched (then the whole graph decides).
                       StitchGroupJudge judge;
                       if (options.substitutions.check_rewrites)
                         judge = [&](const std::function<void()>& operators, const std::function<void()>& stitched) {
                           const auto samples = TimeRunsSideBySide(options.executor.device, /*warmup=*/2, /*rounds=*/10,
                                                                   {operators, stitched});
                           return RobustMs(samples[1], 0.3) < RobustMs(samples[0], 0.3);
                         };
                       const StitchReport s = StitchMemoryBoundOps(g, v, StitchPlanOptionsFor(DeviceModel::ByName(DeviceModelName(options))), judge);
                       return RewriteOutcome{s.groups, s.ops_stitched, s.groups_rejected};
                     },
                     [](const RewriteOutcome& o, OptimizeReport* r) {
                       r->stitch_groups += o.changes;
                       r->ops_stitched += o.absorbed;
                     }});
  return steps;
}

// The graph without and with a rewrite, side by side, each run under the one-stream schedule and
// under Nimble's: a rewrite that speeds up one stream may cost concurrency (stitching an RNN's
// independent cells into one kernel serializes them: RNNTC-SRU ran slower stitched than unstitched
// under Nimble's schedule), so each graph counts with the better of its two schedules, robust ms.
// When the two are within 5 % of each other, 20 more rounds decide (a shared machine's noise is of
// that order, and a rewrite kept on noise may be a loss).
std::pair<double, double> TimeSideBySide(const GraphValues& without, const GraphValues& with,
                                         const OptimizeOptions& options) {
  const std::vector<c10::IValue>& inputs = without.inputs();
  const OpGraph a = ImportOpGraph(without), b = ImportOpGraph(with);
  const ExecutorOptions executor = options.executor;
  const int streams = std::max(1, options.search.max_streams);
  const StageExecutor a_one(a, SequentialSchedule(a), executor), a_nimble(a, NimbleSchedule(a, streams), executor);
  const StageExecutor b_one(b, SequentialSchedule(b), executor), b_nimble(b, NimbleSchedule(b, streams), executor);
  const std::vector<std::function<void()>> runs = {[&] { a_one.Run(inputs); }, [&] { a_nimble.Run(inputs); },
                                                   [&] { b_one.Run(inputs); }, [&] { b_nimble.Run(inputs); }};
  auto samples = TimeRunsSideBySide(options.executor.device, /*warmup=*/2, /*rounds=*/10, runs);
  auto best = [&](size_t first) {
    return std::min(RobustMs(samples[first], 0.3), RobustMs(samples[first + 1], 0.3));
  };
  double without_ms = best(0), with_ms = best(2);
  if (std::abs(with_ms - without_ms) < 0.05 * without_ms) {
    const auto more = TimeRunsSideBySide(options.executor.device, /*warmup=*/0, /*rounds=*/20, runs);
    for (size_t i = 0; i < runs.size(); ++i) samples[i].insert(samples[i].end(), more[i].begin(), more[i].end());
    without_ms = best(0);
    with_ms = best(2);
  }
  return {without_ms, with_ms};
}

}  // namespace

StitchPlanOptions StitchPlanOptionsFor(const DeviceModel& device) {
  StitchPlanOptions plan;
  plan.launch_us = device.launch_us;
  plan.bytes_per_us = device.memory_gbps * 1e3 * device.memory_efficiency;
  return plan;
}

GraphValues ApplyRewrites(GraphValues recorded, const OptimizeOptions& options, bool searched, OptimizeReport* report,
                          RewriteSet set, LoweringRequest* lowering) {
  const auto start = std::chrono::steady_clock::now();
  for (const RewriteStep& step : RewriteSteps(options, searched, lowering)) {
    if (!InSet(step, set)) continue;
    RewriteDecision decision;
    decision.name = step.name;
    const bool checked = options.substitutions.check_rewrites && step.timed;
    GraphPtr candidate = checked ? recorded.graph()->copy() : recorded.graph();
    std::optional<GraphValues> candidate_values;
    if (checked) candidate_values = recorded.ForCopy(candidate);
    const RewriteOutcome outcome = step.apply(candidate, checked ? *candidate_values : recorded);
    decision.changes = outcome.changes;
    decision.rejected = outcome.rejected;
    // The rewritten graph runs once, when it changed: its record serves the timing below and, if it
    // is kept, every later step and the search.
    auto record_candidate = [&] {
      if (!candidate_values || !candidate_values->Fits(*candidate))
        candidate_values = GraphValues::Record(candidate, recorded.inputs());
    };
    if (outcome.changes > 0 && checked) {
      record_candidate();
      std::tie(decision.without_ms, decision.with_ms) = TimeSideBySide(recorded, *candidate_values, options);
      decision.kept = decision.with_ms < decision.without_ms;
    } else {
      decision.kept = outcome.changes > 0;
    }
    if (decision.kept || !checked) {  // unchecked: the pass's own result
      if (!checked && recorded.Fits(*candidate)) candidate_values = std::move(recorded);  // unchanged
      record_candidate();
      recorded = std::move(*candidate_values);
    }
    if (decision.kept) step.count(outcome, report);
    report->rewrites.push_back(std::move(decision));
  }
  report->rewrite_seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return recorded;
}

}  // namespace autograph
