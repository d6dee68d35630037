#pragma once
// Substitution: a 2-d convolution followed by relu, or by a residual add and relu (ResNet's block
// ending), becomes one cuDNN fused kernel — aten::cudnn_convolution_relu or
// aten::cudnn_convolution_add_relu (relu(conv(x, w) + alpha * z + bias)) — saving one or two
// memory-bound kernels and a round trip of the convolution's output through memory. Constant
// biases are already in the convolution (frozen folding). Only for CUDA targets: those ops have no
// CPU kernel, and on CPU oneDNN's fused convolution (mkldnn::_convolution_pointwise) was measured
// slower than conv2d + relu without prepacked weights (a ResNet-sized 3x3 convolution).
#include <ATen/core/ivalue.h>

#include "graph_pass/graph_values.h"

#include <memory>
#include <vector>

namespace torch::jit {
struct Graph;
}  // namespace torch::jit

namespace autograph {

// Rewrites the top-level block of a lowered (frozen) graph in place; returns the fused
// convolutions created. Folds only where the weight is a constant contiguous 4-d tensor, the bias a
// matching constant (or None), and the intermediate results have no other reader; in-place forms
// (add_, relu_) fold alike. The added operand must be a tensor (the Tensor overload of add, not the
// Scalar one) of exactly the convolution output's shape, dtype and device, as measured by running
// the graph once on `example_inputs` (cuDNN's fused add does not broadcast or promote); the run
// happens only when some candidate is found. Throws InputError when the inputs do not fit the graph.
int FoldConvolutionAddRelu(std::shared_ptr<torch::jit::Graph>& graph, const std::vector<c10::IValue>& example_inputs);
// The same with shapes from the recorded run of `graph` (runs again only when writing traced
// aten::_convolution nodes as conv2d changed the graph first).
int FoldConvolutionAddRelu(std::shared_ptr<torch::jit::Graph>& graph, const GraphValues& values);

}  // namespace autograph
