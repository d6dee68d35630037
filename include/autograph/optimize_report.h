#pragma once
// What optimize (and substitute) did: the schedule kept, what the search and the rewrites did and
// measured, and the report as JSON — the one form the CLI prints and the Python side returns.
#include <nlohmann/json_fwd.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "autograph/candidate_timing.h"
#include "autograph/schedule.h"
#include "autograph/timeline.h"

namespace autograph {

// A rewrite tried on the graph (check_rewrites): how much it changed and what the graph measured without
// and with it; undone when it did not measure faster.
struct RewriteDecision {
  std::string name;          // fuse_attention, merge_linears, regroup_convolutions, fold_conv_relu, prepack_onednn, channels_last_pools, stitch
  int changes = 0;           // rewrites it made (attentions fused, linears merged, groups stitched, ...)
  int rejected = 0;          // parts timed slower on their own and not made (stitch groups)
  double without_ms = -1, with_ms = -1;  // whole graph, robust ms side by side; -1 when not timed
  bool kept = false;
};

// A schedule planned for OptimizeOptions::shapes (besides the example inputs' own).
struct ShapePlan {
  std::vector<std::vector<int64_t>> shapes;  // of every input tensor
  int stages = 0, streams = 0;
  double predicted_ms = -1;  // under the cost model (ios, autograph), else -1
  double measured_ms = -1;   // on-board verification (autograph with verify > 0), else -1
  std::string skipped;       // not empty: no schedule of its own, and why
};

// Operators of one kind that run as plain TorchScript, and why.
struct TorchScriptPart {
  std::string op;      // "prim::If", "mylib::op", ...
  std::string reason;  // what keeps autograph from doing more with it
  int count = 0;
};

// Option precision below fp32 on the TorchScript path: what was asked, the twin tried (the program in a
// lower precision), its error and time beside the program's, and what was kept.
// A run of matrix products and convolutions tried lowered (PrecisionDecision::parts).
struct PrecisionPart {
  int operators = 0;
  double flops = 0;
  std::string precision;  // what it computes in: the lowered dtype, or fp32
  double error = -1;      // the outputs' when it was tried (with the runs kept before it lowered)
};

struct PrecisionDecision {
  std::string asked;      // option precision
  double tolerance = 0;   // option tolerance
  std::string accuracy = "max_error";  // option accuracy: what `error` and the parts' errors count
  std::vector<double> judged;         // the twin's measure on each judged call (the example's first)
  std::string kept = "fp32";
  double error = -1;      // the twin's, relative to each output's scale (the worst output); -1: none tried
  double fp32_ms = -1, lowered_ms = -1;  // medians, timed side by side; -1: not timed
  std::string note;       // why the twin was not kept, or none tried
  int calibration_inputs = 0;  // besides the example inputs, the calls `error` is the largest over
  std::vector<PrecisionPart> parts;  // where the whole graph lowered missed the tolerance: each run tried
};

struct OptimizeReport {
  // Not empty when optimize gave the module back unchanged (one warning said so): why.
  std::string fallback;
  int operators_optimized = 0;                    // operators the schedule places (and may merge, stitch)
  std::vector<TorchScriptPart> left_to_torchscript;  // the rest, by kind and reason
  std::string method;
  std::string device;        // where it was planned and measured, e.g. "cpu", "cuda:0"
  std::string cost;          // cost model's name, empty for methods that use none
  // Kernels, one definition for both counts and both drivers: the operators of the operator graph that
  // launch work (views, constants and list plumbing launch nothing), a Merge stage one kernel.
  int operators_before = 0;  // of the lowered graph, before rewrites, stitching and merges
  int operators_after = 0;   // launched per run by the result
  int stages = 0, groups = 0, streams = 0;
  double search_seconds = 0;
  double rewrite_seconds = 0;  // rewrites, their timing included
  int64_t states_explored = 0;
  int64_t stages_evaluated = 0;
  int64_t stages_measured = 0;  // measured cost: stages run on the device (the rest came from memo or disk cache)
  int64_t cost_cache_hits = 0;
  double predicted_ms = -1;  // of the kept schedule under the cost model (ios, autograph), else -1
  double measured_ms = -1;   // on-board verification of the kept schedule (autograph with verify > 0), else -1
  std::vector<CandidateTiming> candidates;  // autograph with verify > 0: every schedule run, in the order run
  std::string chosen;                       // the candidate kept
  std::vector<RewriteDecision> rewrites;    // every rewrite tried, kept or undone
  int candidates_verified = 0;
  int blocks_over_budget = 0;
  int linears_merged = 0;  // linears removed by merge_linears (a group of k counts k - 1)
  int convolutions_regrouped = 0;  // grouped convolutions given fewer groups (regroup_convolutions)
  int convolutions_folded = 0;     // cuDNN fused convolutions created (fold_conv_relu)
  int attentions_fused = 0;        // scaled_dot_product_attention ops created (fuse_attention)
  int ops_lowered = 0;             // matrix products and convolutions computing below float32 (precision)
  int ops_prepacked = 0;           // operators reading prepacked oneDNN or transposed weights (prepack_onednn)
  int pools_channels_last = 0;     // pools run on a channels-last copy (channels_last_pools)
  int ops_folded = 0;              // relu / add kernels they absorbed
  int stitch_groups = 0;   // stitched kernels created
  int ops_stitched = 0;    // memory-intensive operators they replace
  int memory_bound_before = 0, memory_bound_after = 0;  // memory-bound kernels per run, before and after
  Schedule schedule;
  Timeline timeline;  // the kept schedule in time (optimize; empty when it fell back)
  std::vector<ShapePlan> shape_plans;  // one per OptimizeOptions::shapes, in order
  std::optional<PrecisionDecision> precision;  // option precision below fp32 (ChoosePrecision)
};

// Every field by its name, times in ms (null where not measured or predicted), "schedule" as
// ScheduleToJson writes it, "timeline" as TimelineToJson does (null when it has no stages).
nlohmann::json ReportToJson(const OptimizeReport& report);

}  // namespace autograph
