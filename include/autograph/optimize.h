#pragma once
// autograph::optimize: a TorchScript module in, an ordinary TorchScript module out, whose forward
// runs a schedule of stages through autograph::run(Tensor[] inputs, Program program) -> Tensor[].
#include <ATen/core/ivalue.h>
#include <c10/core/Device.h>

#include <functional>
#include <string>
#include <vector>

#include "autograph/schedule.h"

namespace torch::jit {
struct Module;
}

namespace autograph {

struct OptimizeOptions {
  std::vector<c10::IValue> example_inputs;  // one per forward() argument; moved to `device`
  std::string method = "greedy";            // sequential | greedy | nimble | ios | autograph
  c10::Device device = c10::kCPU;
  int max_streams = 8;                      // at most this many groups per stage
  bool cuda_graph = false;                  // CUDA only
  bool merge_linears = false;               // substitution: linears sharing an input -> one wider linear
  bool regroup_convolutions = false;        // substitution: grouped convs with fewer groups, where timing says it pays
  bool fold_conv_relu = false;              // substitution (CUDA): conv + [add +] relu -> one cuDNN fused kernel
  bool fuse_attention = false;              // substitution: matmul, scale, mask, softmax, matmul -> one fused attention
  bool stitch = false;                      // memory-intensive operators -> stitched kernels (ILP planner)

  // Searches (ios, autograph): the cost model stages are ranked with. "analytical": a roofline of
  // `device_model`; "measured": stages run for real on `device` (memoized, cached on disk).
  std::string cost = "analytical";
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
  int verify = 3;
  std::function<void(int, int)> progress;  // search progress: (blocks done, blocks in all)
};

struct OptimizeReport {
  std::string method;
  std::string cost;          // cost model's name, empty for methods that use none
  int operators_before = 0;  // kernels the lowered graph launches, before substitutions, stitching and merges
  int operators_after = 0;   // kernels launched per run after merging
  int stages = 0, groups = 0, streams = 0;
  double search_seconds = 0;
  int64_t states_explored = 0;
  int64_t stages_evaluated = 0;
  int64_t stages_measured = 0;  // measured cost: stages run on the device (the rest came from memo or disk cache)
  int64_t cost_cache_hits = 0;
  double predicted_ms = -1;  // under the cost model (ios, autograph), else -1
  double measured_ms = -1;   // on-board verification of the kept schedule (autograph with verify > 0), else -1
  int candidates_verified = 0;
  int blocks_over_budget = 0;
  int linears_merged = 0;  // linears removed by merge_linears (a group of k counts k - 1)
  int convolutions_regrouped = 0;  // grouped convolutions given fewer groups (regroup_convolutions)
  int convolutions_folded = 0;     // cuDNN fused convolutions created (fold_conv_relu)
  int attentions_fused = 0;        // scaled_dot_product_attention ops created (fuse_attention)
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
