#pragma once
// Import's part of merging for an exported program: what each operator of its ATen graph brings to
// a merged kernel, or why it cannot join one. An exported program's weights are inputs of its graph
// (parameters, buffers, constants), the same tensors on every run, so a candidate names their input
// positions and holds the tensors of the run it was described on.
#include <ATen/core/Tensor.h>

#include <vector>

#include "core/op_graph.h"

namespace autograph {

// Op `id` of `graph` (over an AtenGraph) as a merge candidate, its weight and bias taken from
// `inputs` (one tensor per graph input, weights and the user's, in order; meta tensors will do for
// checking a plan). A convolution (aten::conv2d, also with a padding mode, or aten::convolution /
// aten::_convolution) is one when its weight and bias are weights of the program, stride, padding,
// dilation, groups (1) and transposed (false) are constants, and it reads a 4-D value; a linear
// (aten::linear) when its weight (2-D) and bias are weights of the program. Neither may have its
// output written in place. Otherwise Kind::None with the reason.
MergeCandidate DescribeAtenMergeCandidate(const OpGraph& graph, int id, const std::vector<at::Tensor>& inputs);

}  // namespace autograph
