#include "graph_pass/describe_merge_candidate.h"

#include <torch/csrc/jit/ir/ir.h>

#include <string>

#include "graph_pass/constant_arguments.h"
#include "graph_pass/sibling_linears.h"
#include "merge/convolution_merge_rules.h"
#include "merge/merged_convolution.h"

namespace autograph {

namespace {

using torch::jit::Node;
using torch::jit::Value;

std::string ValueName(const Value* v) { return "%" + v->debugName(); }

// The padding of a convolution into conv->padding (2 entries): a constant list, or the "same" /
// "valid" modes (after conv->weight and conv->dilation are read). "" or why it cannot be merged.
std::string ReadPadding(Value* value, MergeCandidate* conv) {
  auto padding = ConstantOf(value);
  if (!padding || !padding->isString()) {
    auto ints = ConstantInts(value);
    if (!ints || TwoDimensional(*ints).empty()) return "has a padding that is not a constant list of 1 or 2 ints";
    conv->padding = TwoDimensional(*ints);
    return "";
  }
  return PaddingOfMode(padding->toStringRef(), conv->weight, conv->dilation, &conv->padding);
}

// Op `id` read as a mergeable convolution, or why it is not one.
MergeCandidate DescribeConvolution(const OpGraph& graph, int id) {
  const OpNode& op = graph.node(id);
  const std::string who = OpLabel(graph, id);
  MergeCandidate conv;
  auto fail = [&](const std::string& reason) {
    MergeCandidate none;
    none.problem = who + " " + reason;
    return none;
  };
  const Node* node = op.anchor;
  const c10::Symbol kind = node->kind();
  const bool conv2d_layout = kind == c10::aten::conv2d || kind == c10::aten::_convolution_mode;
  const bool convolution_layout = kind == c10::aten::convolution || kind == c10::aten::_convolution;
  if (node->inputs().size() < (conv2d_layout ? 7u : 9u)) return fail("has fewer inputs than its schema");

  conv.input = static_cast<int64_t>(node->input(0)->unique());
  conv.input_name = ValueName(node->input(0));
  if (!op.inputs.empty() && op.inputs[0].shape.size() != 4) {
    return fail("reads a " + std::to_string(op.inputs[0].shape.size()) +
                "-D input; only batched 2-D convolutions ([N, C, H, W]) are merged");
  }
  auto weight = ConstantOf(node->input(1));
  if (!weight || !weight->isTensor()) {
    return fail("has a weight computed at run time (" + ValueName(node->input(1)) +
                "); only frozen (constant) weights can be merged — lower the module with freezing");
  }
  conv.weight = weight->toTensor();
  auto bias = ConstantOf(node->input(2));
  if (!bias || !(bias->isNone() || bias->isTensor()))
    return fail("has a bias computed at run time (" + ValueName(node->input(2)) + "); only frozen biases can be merged");
  if (bias->isTensor()) conv.bias = bias->toTensor();

  const int padding_index = 4, dilation_index = 5, groups_index = conv2d_layout ? 6 : 8;
  auto stride = ConstantInts(node->input(3));
  auto dilation = ConstantInts(node->input(dilation_index));
  auto groups = ConstantOf(node->input(groups_index));
  if (!stride || TwoDimensional(*stride).empty()) return fail("has a stride that is not a constant list of 1 or 2 ints");
  if (!dilation || TwoDimensional(*dilation).empty())
    return fail("has a dilation that is not a constant list of 1 or 2 ints");
  if (!groups || !groups->isInt()) return fail("has groups that are not a constant int");
  if (groups->toInt() != 1) return fail("has groups = " + std::to_string(groups->toInt()) + "; only groups = 1 merges");
  if (convolution_layout) {
    auto transposed = ConstantOf(node->input(6));
    if (!transposed || !transposed->isBool()) return fail("has a 'transposed' flag that is not a constant");
    if (transposed->toBool()) return fail("is a transposed convolution; only plain convolutions merge");
  }
  conv.stride = TwoDimensional(*stride);
  conv.dilation = TwoDimensional(*dilation);
  if (conv.weight.dim() != 4) {
    return fail("has a " + std::to_string(conv.weight.dim()) + "-D weight; only 2-D convolutions merge");
  }

  const std::string padding_problem = ReadPadding(node->input(padding_index), &conv);
  if (!padding_problem.empty()) return fail(padding_problem);

  // Alone, it must satisfy what a merge needs of each conv (weight shape, bias shape and dtype).
  const std::string conflict = ConvolutionMergeConflict({conv.weight}, {conv.bias}, conv.stride, {conv.padding},
                                                        conv.dilation, [&](size_t) { return who; });
  if (!conflict.empty()) {
    MergeCandidate none;
    none.problem = conflict;
    return none;
  }
  conv.kind = MergeCandidate::Kind::Convolution;
  return conv;
}

MergeCandidate DescribeLinear(const OpGraph& graph, int id) {
  torch::jit::Node* anchor = graph.node(id).anchor;
  MergeCandidate linear;
  auto sibling = AsSiblingLinear(anchor, anchor->input(0), *graph.graph());
  if (!sibling) {
    linear.problem = OpLabel(graph, id) +
                     " has a weight or bias computed at run time, or an output written in place; only linears with "
                     "frozen weights whose outputs may become slices merge";
    return linear;
  }
  linear.kind = MergeCandidate::Kind::Linear;
  linear.input = static_cast<int64_t>(anchor->input(0)->unique());
  linear.input_name = ValueName(anchor->input(0));
  linear.weight = sibling->weight;
  if (sibling->bias.defined()) linear.bias = sibling->bias;
  return linear;
}

}  // namespace

MergeCandidate DescribeMergeCandidate(const OpGraph& graph, int id) {
  const OpNode& op = graph.node(id);
  if (op.anchor && op.anchor->kind() == c10::aten::linear) return DescribeLinear(graph, id);
  if (op.anchor && IsMergeableConvolutionOp(op.op)) return DescribeConvolution(graph, id);
  MergeCandidate none;
  none.problem = OpLabel(graph, id) + " is " + op.op + ", which no merged kernel computes";
  return none;
}

}  // namespace autograph
