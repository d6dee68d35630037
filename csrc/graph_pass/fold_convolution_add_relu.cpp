#include "autograph/fold_convolution_add_relu.h"

#include <torch/csrc/jit/ir/constants.h>
#include <torch/csrc/jit/ir/ir.h>
#include <torch/csrc/jit/ir/subgraph_matcher.h>
#include <torch/csrc/jit/passes/graph_rewrite_helper.h>
#include <torch/csrc/jit/passes/subgraph_rewrite.h>

#include <string>

namespace autograph {

namespace {

using torch::jit::Match;
using torch::jit::Value;

const char* kConvRelu = R"IR(
graph(%x, %weight, %bias, %stride:int[], %padding:int[], %dilation:int[], %groups:int):
  %c = aten::conv2d(%x, %weight, %bias, %stride, %padding, %dilation, %groups)
  %r = aten::RELU(%c)
  return (%r))IR";

const char* kConvReluFused = R"IR(
graph(%x, %weight, %bias, %stride:int[], %padding:int[], %dilation:int[], %groups:int):
  %r = aten::cudnn_convolution_relu(%x, %weight, %bias, %stride, %padding, %dilation, %groups)
  return (%r))IR";

// The convolution as the first operand of the add: relu(conv + alpha * z).
const char* kConvAddRelu = R"IR(
graph(%x, %weight, %bias, %z, %alpha, %stride:int[], %padding:int[], %dilation:int[], %groups:int):
  %c = aten::conv2d(%x, %weight, %bias, %stride, %padding, %dilation, %groups)
  %s = aten::ADD(%c, %z, %alpha)
  %r = aten::RELU(%s)
  return (%r))IR";

// The convolution as the second operand: relu(z + alpha * conv) folds when alpha is 1 (checked by
// FusableConstants; a constant inside the pattern would have readers outside the match).
const char* kAddConvRelu = R"IR(
graph(%x, %weight, %bias, %z, %alpha_one, %stride:int[], %padding:int[], %dilation:int[], %groups:int):
  %c = aten::conv2d(%x, %weight, %bias, %stride, %padding, %dilation, %groups)
  %s = aten::add(%z, %c, %alpha_one)
  %r = aten::RELU(%s)
  return (%r))IR";

const char* kConvAddReluFused = R"IR(
graph(%x, %weight, %bias, %z, %alpha, %stride:int[], %padding:int[], %dilation:int[], %groups:int):
  %r = aten::cudnn_convolution_add_relu(%x, %weight, %z, %alpha, %bias, %stride, %padding, %dilation, %groups)
  return (%r))IR";

const char* kAddConvReluFused = R"IR(
graph(%x, %weight, %bias, %z, %alpha_one, %stride:int[], %padding:int[], %dilation:int[], %groups:int):
  %r = aten::cudnn_convolution_add_relu(%x, %weight, %z, %alpha_one, %bias, %stride, %padding, %dilation, %groups)
  return (%r))IR";

std::string With(std::string pattern, const std::string& add, const std::string& relu) {
  for (auto [from, to] : {std::pair<std::string, std::string>{"ADD", add}, {"RELU", relu}}) {
    const size_t at = pattern.find(from);
    if (at != std::string::npos) pattern.replace(at, from.size(), to);
  }
  return pattern;
}

// What cuDNN's fused kernels take: a constant contiguous 4-d weight, a constant bias of the same
// dtype with one entry per output channel, or none; alpha_one, where a pattern has it, is 1.
bool FusableConstants(const Match& match, const std::unordered_map<std::string, Value*>& vmap) {
  if (vmap.count("alpha_one")) {
    auto alpha = torch::jit::toIValue(match.values_map.at(vmap.at("alpha_one")));
    if (!alpha || !((alpha->isInt() && alpha->toInt() == 1) || (alpha->isDouble() && alpha->toDouble() == 1.0)))
      return false;
  }
  auto weight = torch::jit::toIValue(match.values_map.at(vmap.at("weight")));
  if (!weight || !weight->isTensor()) return false;
  const at::Tensor& w = weight->toTensor();
  if (w.dim() != 4 || !w.is_contiguous() || !at::isFloatingType(w.scalar_type())) return false;
  auto bias = torch::jit::toIValue(match.values_map.at(vmap.at("bias")));
  if (!bias) return false;
  if (bias->isNone()) return true;
  if (!bias->isTensor()) return false;
  const at::Tensor& b = bias->toTensor();
  return b.dim() == 1 && b.size(0) == w.size(0) && b.scalar_type() == w.scalar_type() && b.device() == w.device();
}

int CountFused(const torch::jit::Graph& graph) {
  int n = 0;
  for (const torch::jit::Node* node : graph.nodes())
    n += node->kind() == c10::Symbol::fromQualString("aten::cudnn_convolution_relu") ||
         node->kind() == c10::Symbol::fromQualString("aten::cudnn_convolution_add_relu");
  return n;
}

}  // namespace

int FoldConvolutionAddRelu(std::shared_ptr<torch::jit::Graph>& graph) {
  const int before = CountFused(*graph);
  torch::jit::SubgraphRewriter rewriter;
  // A match needs every intermediate (the conv's output, the sum) to have no reader outside it.
  for (const std::string relu : {"relu", "relu_"}) {
    for (const std::string add : {"add", "add_"}) rewriter.RegisterRewritePattern(With(kConvAddRelu, add, relu), kConvAddReluFused);
    rewriter.RegisterRewritePattern(With(kAddConvRelu, "add", relu), kAddConvReluFused);
    rewriter.RegisterRewritePattern(With(kConvRelu, "", relu), kConvReluFused);
  }
  // Traced models hold aten::_convolution: written as conv2d (torch's helper) the patterns see them.
  torch::jit::graph_rewrite_helper::replaceConvolutionWithAtenConv(graph);
  rewriter.runOnGraph(graph, FusableConstants);
  return CountFused(*graph) - before;
}

}  // namespace autograph
