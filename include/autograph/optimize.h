#pragma once
// autograph::optimize: a TorchScript module in, an ordinary TorchScript module out, whose forward
// runs a schedule of stages through autograph::run(Tensor[] inputs, Program program) -> Tensor[].
#include <ATen/core/ivalue.h>
#include <c10/core/Device.h>

#include <string>
#include <vector>

#include "autograph/schedule.h"

namespace torch::jit {
struct Module;
}

namespace autograph {

struct OptimizeOptions {
  std::vector<c10::IValue> example_inputs;  // one per forward() argument; moved to `device`
  std::string method = "greedy";            // sequential | greedy | ios
  std::string device_model;                 // cost model's device for ios: h100, a100, v100, cpu
                                            // (default: h100 on cuda, cpu on cpu)
  int ios_r = 3, ios_s = 8;                 // ios: operators per group, groups per stage
  int ios_block = 24;                       // ios: operators per block (contiguous in topological order)
  c10::Device device = c10::kCPU;
  int max_streams = 8;                      // at most this many groups per stage
  bool cuda_graph = false;                  // CUDA only
};

struct OptimizeReport {
  std::string method;
  int operators_before = 0;  // OpGraph operators that launch a kernel
  int operators_after = 0;   // kernels launched per run after merging/stitching
                             // TODO(lead): rewrite_module.cpp copies operators_before; set it to
                             // KernelsLaunched(graph, schedule) (schedule.h): a Merge stage counts once
  int stages = 0, groups = 0, streams = 0;
  double search_seconds = 0;
  int64_t states_explored = 0;
  double predicted_ms = -1;  // under the analytical cost model (ios), else -1
  Schedule schedule;
};

// Throws ModelLoadError/InputError/UnsupportedModelError/Error with a clear message.
torch::jit::Module optimize(const torch::jit::Module& module, const OptimizeOptions& options,
                            OptimizeReport* report = nullptr);

}  // namespace autograph
