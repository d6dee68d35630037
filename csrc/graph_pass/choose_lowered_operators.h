#pragma once
// Which of a graph's compute-bound matrix products and convolutions compute below float32 (option
// precision), chosen on the example inputs before the plan is searched: all of them where the graph's outputs stay within
// the tolerance of float32's; else runs of them (contiguous in graph order, of about equal FLOPs)
// lowered one by one, the most FLOPs first, each kept where the outputs stay within the tolerance with
// it and the runs kept before it. Early operators' rounding grows through the layers after them, so it
// is mostly the later runs that stay within the bound.
#include <ATen/core/ivalue.h>
#include <c10/core/ScalarType.h>

#include <memory>
#include <vector>

namespace torch::jit {
struct Graph;
}  // namespace torch::jit

namespace autograph {

class GraphValues;

// One run of operators tried lowered where the whole graph missed the tolerance.
struct LoweredRun {
  int operators = 0;     // how many of the compute-bound ones, contiguous in graph order
  double flops = 0;      // theirs (EstimateFlops)
  bool lowered = false;  // kept lowered
  double error = -1;     // the outputs' with it and the runs kept before it lowered
};

// What the lowering step of the rewrites is asked for, and what it did.
struct LoweringRequest {
  c10::ScalarType dtype = c10::ScalarType::BFloat16;
  double tolerance = 0.01;  // option tolerance: the bound of `accuracy`
  std::string accuracy = "max_error";  // option accuracy (core/output_error.h)
  int runs = 8;             // how many runs the operators are cut into where the whole graph misses
  // An operator doing fewer FLOPs per byte it reads and writes (in float32) is memory-bound on the device
  // (below its roofline's ridge: peak FLOP/s over bytes/s): lowering it saves no compute, and its casts
  // add traffic and launches. Such operators stay float32.
  double least_flops_per_byte = 0;
  // More inputs (each a call's arguments, on the graph's device) on which the outputs must stay within
  // the tolerance too.
  std::vector<std::vector<c10::IValue>> calibration;
  // Filled by ChooseLoweredOperators:
  std::vector<bool> chosen;  // per LowerableOperators position
  int lowerable = 0;         // those of LowerableOperators at or above least_flops_per_byte
  int lowered = 0;
  double whole_error = -1;  // every lowerable operator lowered; -1 where there is none
  double error = -1;        // the chosen operators lowered; -1 where none is chosen
  std::vector<LoweredRun> runs_tried;  // in graph order, where the whole graph missed the tolerance
};

// Fills `request`'s choice for `values`' graph (which it leaves as it is: each trial lowers a copy and
// runs it on the example inputs and on the request's calibration inputs, in full float32 otherwise,
// beside the graph's own full-float32 runs; a trial's error is its largest on any of them; a trial that
// fails to run is beyond the tolerance).
void ChooseLoweredOperators(const GraphValues& values, LoweringRequest* request);

}  // namespace autograph
