// Which convolutions of an imported graph can run as one merged kernel, and their merged weights,
// from the merge candidates the import described (OpNode::merge): a convolution whose weight, bias,
// stride, padding, dilation, groups and transposed flag are constants of the lowered (frozen) graph.
#include <algorithm>

#include "autograph/error.h"
#include "merge/convolution_merge_rules.h"
#include "merge/merged_convolution.h"
#include "merge/mergeable_ops.h"

namespace autograph {

namespace {

// Op `id` as a mergeable convolution, or why it is not one.
const MergeCandidate* ReadConvolution(const OpGraph& graph, int id, std::string* why) {
  const OpNode& op = graph.node(id);
  const std::string who = OpLabel(graph, id);
  if (op.merge.kind == MergeCandidate::Kind::Convolution) return &op.merge;
  if (op.merge.kind == MergeCandidate::Kind::None && op.merge.problem.empty()) {
    *why = who + " has no TorchScript node; only imported convolutions can be merged";
  } else if (!IsMergeableConvolutionOp(op.op)) {
    *why = who + " is " + op.op + ", not a convolution (aten::conv2d, aten::convolution or aten::_convolution)";
  } else {
    *why = op.merge.problem;
  }
  return nullptr;
}

std::string Ints(const std::vector<int64_t>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}

// Convolutions merge when they also share stride and dilation, and their kernels and paddings line up
// (ConvolutionMergeConflict).
const MergeRules& ConvolutionRules() {
  static const MergeRules rules{
      "merged convolution", "convolutions", ReadConvolution,
      [](const std::string& who, const MergeCandidate& c, const std::string& first_label, const MergeCandidate& first) {
        if (c.stride != first.stride) return who + " has stride " + Ints(c.stride) + ", " + first_label + " has " + Ints(first.stride);
        if (c.dilation != first.dilation)
          return who + " has dilation " + Ints(c.dilation) + ", " + first_label + " has " + Ints(first.dilation);
        return std::string();
      },
      [](const OpGraph& graph, const std::vector<int>& ops, const std::vector<const MergeCandidate*>& convs) {
        std::vector<at::Tensor> weights;
        std::vector<std::optional<at::Tensor>> biases;
        std::vector<std::vector<int64_t>> paddings;
        for (const MergeCandidate* c : convs) {
          weights.push_back(c->weight);
          biases.push_back(c->bias);
          paddings.push_back(c->padding);
        }
        return ConvolutionMergeConflict(weights, biases, convs[0]->stride, paddings, convs[0]->dilation,
                                        [&](size_t i) { return OpLabel(graph, ops[i]); });
      }};
  return rules;
}

// What a class of mutually mergeable convolutions shares.
struct ClassKey {
  int64_t input;
  std::vector<int64_t> stride, dilation, parity, offset;
  c10::ScalarType dtype;
  c10::Device device;
  int64_t in_channels;
  bool operator==(const ClassKey& o) const {
    return input == o.input && stride == o.stride && dilation == o.dilation && parity == o.parity &&
           offset == o.offset && dtype == o.dtype && device == o.device && in_channels == o.in_channels;
  }
};

ClassKey KeyOf(const MergeCandidate& c) {
  ClassKey key{c.input, c.stride, c.dilation, {}, {}, c.weight.scalar_type(), c.weight.device(), c.weight.size(1)};
  for (int dim = 0; dim < 2; ++dim) {
    const int64_t k = c.weight.size(2 + dim);
    key.parity.push_back(k % 2);
    key.offset.push_back(2 * c.padding[dim] - c.dilation[dim] * (k - 1));
  }
  return key;
}

}  // namespace

bool IsMergeableConvolutionOp(const std::string& op) {
  return op == "aten::conv2d" || op == "aten::_convolution_mode" || op == "aten::convolution" ||
         op == "aten::_convolution";
}

std::vector<std::vector<int>> MergeableConvolutionClasses(const OpGraph& graph) {
  return MergeClassesBy(graph, [&](int id) -> std::optional<ClassKey> {
    if (graph.node(id).merge.kind != MergeCandidate::Kind::Convolution) return std::nullopt;
    return KeyOf(graph.node(id).merge);
  });
}

bool CanMergeConvolutions(const OpGraph& graph, const std::vector<int>& ops, std::string* why) {
  return CanMergeWith(graph, ops, ConvolutionRules(), why);
}

MergedConvolution MergeConvolutionOps(const OpGraph& graph, const std::vector<int>& ops) {
  std::vector<at::Tensor> weights;
  std::vector<std::optional<at::Tensor>> biases;
  std::vector<std::vector<int64_t>> paddings;
  const std::vector<const MergeCandidate*> convs = MergeCandidatesOf(graph, ops, ConvolutionRules());
  for (const MergeCandidate* c : convs) {
    weights.push_back(c->weight);
    biases.push_back(c->bias);
    paddings.push_back(c->padding);
  }
  return MergeConvolutions(weights, biases, convs[0]->stride, paddings, convs[0]->dilation);
}

}  // namespace autograph
