#pragma once
// What optimize and substitute do, stage by stage: the rewrites of the graph (substitutions), the
// schedule search, the cost model the search ranks stages with, and how the result runs (executor).
// The defaults are the whole product: the `autograph` search with on-board verification, every
// rewrite, CUDA Graphs on CUDA, and each rewrite kept only where the whole graph measures faster with
// it (check_rewrites). The other methods and switches are baselines and experiments.
#include <ATen/core/ivalue.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "autograph/executor_options.h"

namespace autograph {

// Rewrites, in the order they are tried.
struct SubstitutionOptions {
  bool fuse_attention = true;        // matmul, scale, mask, softmax, matmul -> one fused attention
  bool merge_linears = true;         // linears sharing an input -> one wider linear, up front. Not with ios /
                                     // autograph and search.merge: there the search decides per candidate
  bool regroup_convolutions = true;  // grouped convs with fewer groups, where timing says it pays
  bool fold_conv_relu = true;        // conv + [add +] relu -> one cuDNN fused kernel (CUDA only)
  bool prepack_onednn = true;        // convs on prepacked oneDNN weights, as jit_frozen; linears packed (CPU only)
  bool channels_last_pools = true;   // 2-d max / avg pooling on a channels-last copy (CPU only)
  bool stitch = true;                // memory-intensive operators -> stitched kernels (ILP planner)
  // Export path: the kept plan's parts compiled by Inductor (AOTInductor packages, weights frozen),
  // the whole graph as one part beside them; kept where the whole program measures faster.
  bool inductor = true;
  // Export path, CPU: the whole graph compiled by OpenVINO (autograph::run_openvino_part) is one more
  // candidate beside Inductor's, kept where the whole program measures faster.
  bool openvino = true;
  // Export path, CPU: the graph and its parts compiled by ONNX Runtime's CPU provider
  // (autograph::run_onnxruntime_part) compete too, and mix part by part with the others where that is faster.
  bool onnxruntime = true;
  // Every rewrite that changed the graph is timed on the whole graph (the better of the one-stream and
  // Nimble's schedule), side by side with the graph before it, and undone unless it is faster.
  // false: rewrites are kept unmeasured.
  bool check_rewrites = true;
};

struct SearchOptions {
  std::string method = "autograph";  // sequential | greedy | nimble | ios | autograph
  int max_streams = 8;               // at most this many groups per stage
  int ios_r = 3, ios_s = 8;          // ios: operators per group, groups per stage
  int ios_block = 24;                // ios: operators per block (contiguous in topological order)
  bool merge = true;                 // ios, autograph: sibling convolutions / linears may become one merged kernel
  // autograph: flow-based partition, then per block a DP with backtracking ranked by the mixed
  // critical path cost; the best `verify` whole-graph candidates run for real on the device and the
  // fastest is kept.
  double alpha = 1.0;
  int block_ops = 40;  // the partition's bounds per block: operators (<= 64) and states
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

// Searches (ios, autograph): the cost model stages are ranked with.
struct CostOptions {
  // "analytical": a roofline of `device_model`; "measured": stages run for real on the device
  // (memoized, cached on disk). "" = measured on CUDA, analytical on CPU (measuring every stage on a
  // CPU takes minutes).
  std::string model;
  std::string device_model;  // h100, a100, v100, cpu, or a calibrated .json (default: a calibration of this
                             // device if `autograph calibrate` made one, else h100 on cuda, cpu on cpu)
  std::string cache;         // measured: disk cache file; "" = ~/.cache/autograph/costs/<device>.json, "none" = off
};

// How far below float32 a candidate may compute. A lowered candidate is kept only where its outputs stay
// within `tolerance` of float32's by `accuracy` (core/output_error.h: max_error, relative to each output's
// largest magnitude; top1, cosine, sqnr) and it measures faster; the user's inputs and outputs keep their
// dtypes.
struct NumericsOptions {
  std::string precision = "fp32";  // fp32 | tf32 | bf16 | fp16: the lowest a candidate may compute in
  double tolerance = 1e-2;
  std::string accuracy = "max_error";  // max_error | top1 | cosine | sqnr
};

struct OptimizeOptions {
  // One per forward() argument, of any TorchScript structure (tensors, tuples, lists, dicts with
  // string keys, numbers, bools, None); the tensors inside are moved to executor.device.
  std::vector<c10::IValue> example_inputs;
  // Option precision: more calls' arguments, each structured like example_inputs, on which a program
  // computing below float32 must meet numerics.tolerance too (the example inputs are always checked).
  // One whose structure, dtypes or shapes differ from example_inputs' is an InputError before any work.
  std::vector<std::vector<c10::IValue>> calibration_inputs;
  // More input shapes to plan for, one schedule each (a server's batch sizes and sequence lengths): per
  // shape, the sizes of every tensor inside example_inputs, in order. A call runs the schedule planned
  // for its shapes, or for the nearest ones. The rewrites are chosen at example_inputs' shapes.
  std::vector<std::vector<std::vector<int64_t>>> shapes;
  // Shapes that calls bring and no plan was made for: up to this many are planned at their first call
  // (that call waits for the search), kept in the module and saved with it; beyond, or with 0, such
  // calls run the nearest plan. TorchScript path; needs the planning library (libautograph) loaded.
  int plan_new_shapes = 0;
  ExecutorOptions executor{c10::kCPU, /*cuda_graph=*/true};  // cuda_graph: ignored on CPU
  SubstitutionOptions substitutions;
  SearchOptions search;
  CostOptions cost;
  NumericsOptions numerics;
};

}  // namespace autograph
