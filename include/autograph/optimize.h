#pragma once
// autograph::optimize: a TorchScript module in, an ordinary TorchScript module out, whose forward
// runs a schedule of stages through autograph::run(Tensor[] inputs, Program program) -> Tensor[].
#include <ATen/core/ivalue.h>
#include <c10/core/Device.h>

#include <functional>
#include <string>
#include <vector>

#include "core/schedule.h"
#include "measure/fastest_schedule.h"

namespace torch::jit {
struct Module;
}

namespace autograph {

// The defaults are the whole product: the `autograph` search with on-board verification, every
// rewrite, CUDA Graphs on CUDA, and each rewrite kept only where the whole graph measures faster with
// it (check_rewrites). The other methods and switches are baselines and experiments.
struct OptimizeOptions {
  std::vector<c10::IValue> example_inputs;  // one per forward() argument; moved to `device`
  std::string method = "autograph";         // sequential | greedy | nimble | ios | autograph
  c10::Device device = c10::kCPU;
  int max_streams = 8;                      // at most this many groups per stage
  bool cuda_graph = true;                   // replay the run as a CUDA Graph (on CUDA devices; ignored on CPU)
  // Rewrites, in the order they are tried:
  bool fuse_attention = true;        // matmul, scale, mask, softmax, matmul -> one fused attention
  bool merge_linears = true;         // linears sharing an input -> one wider linear, up front. Not with ios /
                                     // autograph and `merge`: there the search decides per candidate
  bool regroup_convolutions = true;  // grouped convs with fewer groups, where timing says it pays
  bool fold_conv_relu = true;        // conv + [add +] relu -> one cuDNN fused kernel (CUDA only)
  bool prepack_onednn = true;        // convs / linears on prepacked oneDNN weights, as jit_frozen (CPU only)
  bool channels_last_pools = true;   // 2-d max / avg pooling on a channels-last copy (CPU only)
  bool stitch = true;                // memory-intensive operators -> stitched kernels (ILP planner)
  // Every rewrite that changed the graph is timed on the whole graph (run as one stream, side by side
  // with the graph before it) and undone unless it is faster. false: rewrites are kept unmeasured.
  bool check_rewrites = true;

  // Searches (ios, autograph): the cost model stages are ranked with. "analytical": a roofline of
  // `device_model`; "measured": stages run for real on `device` (memoized, cached on disk).
  // "" = measured on CUDA, analytical on CPU (measuring every stage on a CPU takes minutes).
  std::string cost;
  std::string device_model;    // h100, a100, v100, cpu, or a calibrated .json (default: h100 on cuda, cpu on cpu)
  std::string cost_cache;      // measured: disk cache file; "" = ~/.cache/autograph/costs/<device>.json, "none" = off
  int ios_r = 3, ios_s = 8;    // ios: operators per group, groups per stage
  int ios_block = 24;          // ios: operators per block (contiguous in topological order)
  bool merge = true;           // ios, autograph: sibling convolutions / linears may become one merged kernel

  // autograph: flow-based partition, then per block a DP with backtracking ranked by the mixed
  // critical path cost; the best `verify` whole-graph candidates run for real on `device` and the
  // fastest is kept (0: keep the best predicted).
  double alpha = 1.0;
  int block_ops = 40;          // the partition's bounds per block: operators (<= 64) and states
  int64_t block_states = 1000;
  int autograph_r = 4;
  int64_t budget = 20000;
  // ios, autograph: seconds for the search (autograph: both partitions; verification not included):
  // past it, blocks finish greedily (blocks_over_budget counts them). 0 = none; negative = 60 with
  // measured costs, none with analytical ones.
  double time_limit = -1;
  // autograph: the search's best `verify` candidates, the one-stream schedule and Nimble's are run side
  // by side on the device and the fastest is kept (0: keep the best predicted, nothing is run).
  int verify = 3;
  std::function<void(int, int)> progress;  // search progress: (blocks done, blocks in all)
};

// A rewrite tried on the graph (check_rewrites): how much it changed and what the graph measured without
// and with it; undone when it did not measure faster.
struct RewriteDecision {
  std::string name;          // fuse_attention, merge_linears, regroup_convolutions, fold_conv_relu, prepack_onednn, channels_last_pools, stitch
  int changes = 0;           // rewrites it made (attentions fused, linears merged, groups stitched, ...)
  int rejected = 0;          // parts timed slower on their own and not made (stitch groups)
  double without_ms = -1, with_ms = -1;  // whole graph, robust ms side by side; -1 when not timed
  bool kept = false;
};

struct OptimizeReport {
  std::string method;
  std::string cost;          // cost model's name, empty for methods that use none
  int operators_before = 0;  // kernels the lowered graph launches, before substitutions, stitching and merges
  int operators_after = 0;   // kernels launched per run after merging
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
  int ops_prepacked = 0;           // operators reading prepacked oneDNN or transposed weights (prepack_onednn)
  int pools_channels_last = 0;     // pools run on a channels-last copy (channels_last_pools)
  int ops_folded = 0;              // relu / add kernels they absorbed
  int stitch_groups = 0;   // stitched kernels created
  int ops_stitched = 0;    // memory-intensive operators they replace
  int memory_bound_before = 0, memory_bound_after = 0;  // memory-bound kernels per run, before and after
  Schedule schedule;
};

// Throws ModelLoadError/InputError/UnsupportedModelError/Error with a clear message.
torch::jit::Module optimize(const torch::jit::Module& module, const OptimizeOptions& options,
                            OptimizeReport* report = nullptr);

}  // namespace autograph
