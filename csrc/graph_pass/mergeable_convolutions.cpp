// Which convolutions of an imported graph can run as one merged kernel, and their merged weights.
// A convolution is read from its anchor node (aten::conv2d, its padding="same"/"valid" overload,
// aten::_convolution_mode, aten::convolution, aten::_convolution) only when everything the merged
// kernel must know before the run is a constant of the lowered (frozen) graph: the weight and bias
// tensors, stride, padding, dilation, groups and transposed. Anything else — a weight computed at
// run time, a non-constant stride — makes the operator not mergeable, with the reason.
#include <torch/csrc/jit/ir/constants.h>
#include <torch/csrc/jit/ir/ir.h>

#include <algorithm>

#include "autograph/error.h"
#include "autograph/merged_convolution.h"
#include "graph_pass/constant_arguments.h"
#include "graph_pass/mergeable_ops.h"
#include "ops/convolution_merge_rules.h"

namespace autograph {

namespace {

using torch::jit::Node;
using torch::jit::Value;

// What one convolution operator says, when it can take part in a merge.
struct ConvolutionNode {
  Value* input = nullptr;
  at::Tensor weight;
  std::optional<at::Tensor> bias;
  std::vector<int64_t> stride, padding, dilation;  // 2 entries each
};

std::string ValueName(const Value* v) { return "%" + v->debugName(); }

// Reads op `id` as a mergeable convolution, or says why it is not one.
std::optional<ConvolutionNode> ReadConvolution(const OpGraph& graph, int id, std::string* why) {
  const OpNode& op = graph.node(id);
  const std::string who = OpLabel(graph, id);
  auto fail = [&](const std::string& reason) -> std::optional<ConvolutionNode> {
    *why = who + " " + reason;
    return std::nullopt;
  };
  const Node* node = op.anchor;
  if (!node) return fail("has no TorchScript node; only imported convolutions can be merged");
  const c10::Symbol kind = node->kind();
  const bool conv2d_layout = kind == c10::aten::conv2d || kind == c10::aten::_convolution_mode;
  const bool convolution_layout = kind == c10::aten::convolution || kind == c10::aten::_convolution;
  if (!conv2d_layout && !convolution_layout) {
    return fail(std::string("is ") + node->kind().toQualString() +
                ", not a convolution (aten::conv2d, aten::convolution or aten::_convolution)");
  }
  if (node->inputs().size() < (conv2d_layout ? 7u : 9u)) return fail("has fewer inputs than its schema");

  ConvolutionNode conv;
  conv.input = node->input(0);
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

  auto padding = ConstantOf(node->input(padding_index));
  if (padding && padding->isString()) {
    const std::string mode = padding->toStringRef();
    if (mode == "valid") {
      conv.padding = {0, 0};
    } else if (mode == "same") {
      // PyTorch pads d*(k-1) in total, the extra one at the end: symmetric only when that is even.
      for (int dim = 0; dim < 2; ++dim) {
        const int64_t total = conv.dilation[dim] * (conv.weight.size(2 + dim) - 1);
        if (total % 2 != 0) {
          return fail("has padding='same' with a kernel that pads unevenly (dilation*(k-1) = " +
                      std::to_string(total) + "), which no symmetric merged padding reproduces");
        }
        conv.padding.push_back(total / 2);
      }
    } else {
      return fail("has padding='" + mode + "'; expected 'same' or 'valid'");
    }
  } else {
    auto ints = ConstantInts(node->input(padding_index));
    if (!ints || TwoDimensional(*ints).empty()) return fail("has a padding that is not a constant list of 1 or 2 ints");
    conv.padding = TwoDimensional(*ints);
  }

  // Alone, it must satisfy what a merge needs of each conv (weight shape, bias shape and dtype).
  const std::string conflict = ConvolutionMergeConflict({conv.weight}, {conv.bias}, conv.stride, {conv.padding},
                                                        conv.dilation, [&](size_t) { return who; });
  if (!conflict.empty()) {
    *why = conflict;
    return std::nullopt;
  }
  return conv;
}

std::string Ints(const std::vector<int64_t>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}

// Reads every op of `ops` and checks that together they merge exactly; fills `convs` on success.
bool ReadMergeable(const OpGraph& graph, const std::vector<int>& ops, std::vector<ConvolutionNode>* convs,
                   std::string* why) {
  *why = OpListProblem(graph, ops, "a merged convolution");
  if (!why->empty()) return false;
  for (int id : ops) {
    auto conv = ReadConvolution(graph, id, why);
    if (!conv) return false;
    convs->push_back(std::move(*conv));
  }
  const ConvolutionNode& first = convs->front();
  const std::string first_label = OpLabel(graph, ops[0]);
  for (size_t i = 1; i < ops.size(); ++i) {
    const ConvolutionNode& c = (*convs)[i];
    const std::string who = OpLabel(graph, ops[i]);
    if (c.input != first.input) {
      *why = who + " reads " + ValueName(c.input) + ", but " + first_label + " reads " + ValueName(first.input) +
             "; merged convolutions share one input";
      return false;
    }
    if (c.stride != first.stride) {
      *why = who + " has stride " + Ints(c.stride) + ", " + first_label + " has " + Ints(first.stride);
      return false;
    }
    if (c.dilation != first.dilation) {
      *why = who + " has dilation " + Ints(c.dilation) + ", " + first_label + " has " + Ints(first.dilation);
      return false;
    }
  }
  std::vector<at::Tensor> weights;
  std::vector<std::optional<at::Tensor>> biases;
  std::vector<std::vector<int64_t>> paddings;
  for (const ConvolutionNode& c : *convs) {
    weights.push_back(c.weight);
    biases.push_back(c.bias);
    paddings.push_back(c.padding);
  }
  *why = ConvolutionMergeConflict(weights, biases, first.stride, paddings, first.dilation,
                                  [&](size_t i) { return OpLabel(graph, ops[i]); });
  if (!why->empty()) return false;
  *why = PathProblem(graph, ops);
  return why->empty();
}

// What a class of mutually mergeable convolutions shares.
struct ClassKey {
  const Value* input;
  std::vector<int64_t> stride, dilation, parity, offset;
  c10::ScalarType dtype;
  c10::Device device;
  int64_t in_channels;
  bool operator==(const ClassKey& o) const {
    return input == o.input && stride == o.stride && dilation == o.dilation && parity == o.parity &&
           offset == o.offset && dtype == o.dtype && device == o.device && in_channels == o.in_channels;
  }
};

ClassKey KeyOf(const ConvolutionNode& c) {
  ClassKey key{c.input, c.stride, c.dilation, {}, {}, c.weight.scalar_type(), c.weight.device(), c.weight.size(1)};
  for (int dim = 0; dim < 2; ++dim) {
    const int64_t k = c.weight.size(2 + dim);
    key.parity.push_back(k % 2);
    key.offset.push_back(2 * c.padding[dim] - c.dilation[dim] * (k - 1));
  }
  return key;
}

}  // namespace

std::vector<std::vector<int>> MergeableConvolutionClasses(const OpGraph& graph) {
  return MergeClassesBy(graph, [&](int id) -> std::optional<ClassKey> {
    std::string why;
    auto conv = ReadConvolution(graph, id, &why);
    if (!conv) return std::nullopt;
    return KeyOf(*conv);
  });
}

bool CanMergeConvolutions(const OpGraph& graph, const std::vector<int>& ops, std::string* why) {
  std::vector<ConvolutionNode> convs;
  std::string reason;
  const bool ok = ReadMergeable(graph, ops, &convs, &reason);
  if (why) *why = ok ? "" : reason;
  return ok;
}

MergedConvolution MergeConvolutionOps(const OpGraph& graph, const std::vector<int>& ops) {
  std::vector<ConvolutionNode> convs;
  std::string why;
  if (!ReadMergeable(graph, ops, &convs, &why)) throw Error("cannot merge these convolutions: " + why);
  std::vector<at::Tensor> weights;
  std::vector<std::optional<at::Tensor>> biases;
  std::vector<std::vector<int64_t>> paddings;
  for (const ConvolutionNode& c : convs) {
    weights.push_back(c.weight);
    biases.push_back(c.bias);
    paddings.push_back(c.padding);
  }
  return MergeConvolutions(weights, biases, convs[0].stride, paddings, convs[0].dilation);
}

}  // namespace autograph
