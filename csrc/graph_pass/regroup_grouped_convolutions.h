#pragma once
// Substitution (TASO's ResNeXt case): a grouped convolution with G groups is the same as one with
// G / f groups whose weight is block-diagonal — each new group holds f old groups, the weights
// between them zero. More multiply-adds, but libraries are often faster on fewer, wider groups
// (TASO's paper measured ResNeXt's 3x3 convolution faster with 8 groups than with 32 on a V100).
// Whether it pays depends on the device and the shape, so each candidate is timed on the example
// input, on the target device, and kept only when it is clearly faster.
//
// Numerics: every output is the same sum of products plus exact zeros (x * 0 = 0), so results
// match to float rounding of the longer reduction — unless an input holds inf or NaN, which then
// spreads to the f - 1 groups merged with its own (inf * 0 = NaN).
#include <ATen/core/ivalue.h>

#include "graph_pass/graph_values.h"

#include <memory>
#include <vector>

namespace torch::jit {
struct Graph;
}  // namespace torch::jit

namespace autograph {

struct RegroupOptions {
  // Timing of each candidate on the device the graph's weights live on.
  int warmup = 3, repeats = 10;
  double fastest_fraction = 0.3;  // robust statistic: mean of the fastest 30 % of the repeats
  // A regrouped convolution is kept only when it takes at most this fraction of the original's time.
  double keep_below = 0.9;
  // Then the whole graph is timed with and without the rewrites, which are kept only when the graph
  // takes at most this fraction of the original's time: alone a regrouped convolution may win and
  // still lose in the model (on CPU, nasnet_a_mobile's depthwise convolutions did). 0: no check.
  double keep_graph_below = 0.97;
  // Tests and experiments: regroup every convolution that allows it to this many groups, without
  // timing (0: decide by timing).
  int64_t force_groups = 0;
};

struct RegroupReport {
  int grouped = 0;    // grouped convolutions with constant weights (candidates)
  int regrouped = 0;  // rewritten with fewer groups
  int timed = 0;      // distinct (shape, groups) configurations timed
  // The whole graph's robust time before and after the rewrites, when it was checked (else -1);
  // when the check undid them, regrouped is 0 and undone is true.
  double graph_ms = -1, regrouped_graph_ms = -1;
  bool undone = false;
};

// Rewrites 2-d convolutions (aten::conv2d, aten::_convolution) of the top-level block of a lowered
// (frozen) graph in place; their weight, bias, stride, padding, dilation and groups must be
// constants. Shapes come from one run of the graph on `example_inputs`. When the whole-graph check
// undoes the rewrites, `graph` is set to an unchanged copy of the original.
RegroupReport RegroupGroupedConvolutions(std::shared_ptr<torch::jit::Graph>& graph,
                                         const std::vector<c10::IValue>& example_inputs,
                                         const RegroupOptions& options = {});
// The same with shapes from the recorded run of `graph` (no run of its own; timing still runs).
RegroupReport RegroupGroupedConvolutions(std::shared_ptr<torch::jit::Graph>& graph, const GraphValues& values,
                                         const RegroupOptions& options = {});

// The weight of the same convolution with groups / factor groups: block-diagonal, zeros elsewhere.
// weight is [out, in / groups, k...]; groups % factor == 0.
at::Tensor BlockDiagonalWeight(const at::Tensor& weight, int64_t groups, int64_t factor);

}  // namespace autograph
