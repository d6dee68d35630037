#pragma once
// The driver's rewrites of a lowered graph, each kept only where the whole graph measures faster with
// it (OptimizeOptions::check_rewrites).
#include <memory>
#include <vector>

#include "autograph/optimize.h"
#include "graph_pass/choose_lowered_operators.h"
#include "graph_pass/graph_values.h"
#include "search/cost/device_model.h"
#include "stitch_plan/plan_stitch_groups.h"

namespace torch::jit {
struct Graph;
}

namespace autograph {

// Tries options' rewrites on the lowered graph in order (fuse_attention, merge_linears, regroup_convolutions,
// fold_conv_relu on CUDA, prepack_onednn and channels_last_pools on CPU, stitch), `inputs` already on options.device. With check_rewrites each is
// applied to a copy, and the copy replaces the graph only when the rewrite changed something and the
// graph, run as one stream, measures faster with it than without (side by side). Fills report's
// rewrite counts (of kept rewrites only) and report->rewrites. `searched`: the schedule search will
// decide sibling-linear merges itself, so merge_linears is not tried up front.
// The stitch planner's figures (a launch against bytes moved) from a device model: how optimize plans
// stitch groups, and what `autograph calibrate` plans them with.
StitchPlanOptions StitchPlanOptionsFor(const DeviceModel& device);

// Which rewrites of the one registry (apply_rewrites.cpp) a driver runs: optimize all of them;
// substitute (the "TASO + JIT" baseline) the graph substitutions alone — fuse_attention,
// merge_linears, regroup_convolutions, fold_conv_relu — not the CPU layout rewrites or stitching.
// Patterns: those that find operators by their pattern whatever their dtype (fuse_attention,
// merge_linears, regroup_convolutions); AfterPatterns: the others, which pick kernels for the graph's
// dtypes (from lower_precision on). Patterns then AfterPatterns is All: the graph after Patterns is where
// a plan lowered below float32 forks from the float32 plan.
enum class RewriteSet { All, Substitutions, Patterns, AfterPatterns };

// `recorded`: the lowered graph's run on the example inputs (on options.device); returns the record
// of the rewritten graph (its graph() is the result). The graph runs once more only after a
// rewrite changed it.
// `lowering`: after the pattern rewrites, the graph's matrix products and convolutions that keep its
// outputs within the request's tolerance are lowered to its dtype (ChooseLoweredOperators,
// LowerMatmulsAndConvolutions), untimed, and the request says what was chosen; the caller judges the plan.
GraphValues ApplyRewrites(GraphValues recorded, const OptimizeOptions& options, bool searched, OptimizeReport* report,
                          RewriteSet set = RewriteSet::All, LoweringRequest* lowering = nullptr);

}  // namespace autograph
