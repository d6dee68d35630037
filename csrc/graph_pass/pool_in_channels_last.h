#pragma once
// Substitution for CPU targets: 2-d max and average pooling run on a channels-last copy of their
// input, their output converted back to the usual (NCHW-contiguous) layout. ATen's CPU pooling
// vectorizes across channels only in channels-last; on NCHW at batch 1 it is several times slower,
// even counting both layout conversions (the outputs are bit-identical). Pools inside oneDNN regions (prepack_onednn) are left to oneDNN.
#include <ATen/core/ivalue.h>

#include "graph_pass/graph_values.h"

#include <memory>
#include <vector>

namespace torch::jit {
struct Graph;
}  // namespace torch::jit

namespace autograph {

// Rewrites top-level aten::max_pool2d / aten::avg_pool2d nodes of a lowered graph whose input, in a
// run on `example_inputs` (made only when some pool exists), is a 4-d strided NCHW-contiguous tensor;
// returns the pools rewritten.
int PoolInChannelsLast(std::shared_ptr<torch::jit::Graph>& graph, const std::vector<c10::IValue>& example_inputs);
// The same from the recorded run of `graph` (no run of its own).
int PoolInChannelsLast(std::shared_ptr<torch::jit::Graph>& graph, const GraphValues& values);

}  // namespace autograph
