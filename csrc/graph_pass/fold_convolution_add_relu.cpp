#include "graph_pass/fold_convolution_add_relu.h"

#include <torch/csrc/jit/ir/constants.h>
#include <torch/csrc/jit/ir/ir.h>
#include <torch/csrc/jit/ir/subgraph_matcher.h>
#include <torch/csrc/jit/passes/graph_rewrite_helper.h>
#include <torch/csrc/jit/passes/subgraph_rewrite.h>

#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>

#include "graph_pass/graph_values.h"

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

bool IsFused(const torch::jit::Node* node) {
  return node->kind() == c10::Symbol::fromQualString("aten::cudnn_convolution_relu") ||
         node->kind() == c10::Symbol::fromQualString("aten::cudnn_convolution_add_relu");
}

int CountFused(const torch::jit::Graph& graph) {
  int n = 0;
  for (const torch::jit::Node* node : graph.nodes()) n += IsFused(node);
  return n;
}

// The real shape, dtype and device of every top-level tensor value, put on the values as complete
// tensor types while the rewriter runs (it copies a replaced value's type onto the fused output, so
// a later pattern still sees the shapes), and the graph's own types put back afterwards. Read from
// `recorded` when given (a run of this very graph), else the graph runs once, on the first request.
class ShapeAnnotation {
 public:
  ShapeAnnotation(std::shared_ptr<torch::jit::Graph> graph, const GraphValues* recorded,
                  const std::vector<c10::IValue>& inputs)
      : graph_(std::move(graph)), recorded_(recorded), inputs_(inputs) {}

  void EnsureAnnotated() {
    if (annotated_) return;
    annotated_ = true;
    std::optional<GraphValues> own;
    if (!recorded_) own = GraphValues::Record(graph_, inputs_);
    const GraphValues& values = recorded_ ? *recorded_ : *own;
    for (const auto& [value, recorded] : values.values()) {
      if (!recorded.isTensor()) continue;
      Value* v = const_cast<Value*>(value);  // values of graph_, which this class may retype
      original_.emplace(v, v->type());
      v->setType(c10::TensorType::create(recorded.toTensor()));
    }
    for (const torch::jit::Node* node : graph_->nodes())
      if (IsFused(node)) fused_before_.insert(node);
  }

  // Fused outputs made meanwhile get a plain tensor type: the shapes were the example's, not the model's.
  void Restore() {
    if (!annotated_) return;
    for (Value* v : graph_->inputs())
      if (auto it = original_.find(v); it != original_.end()) v->setType(it->second);
    for (torch::jit::Node* node : graph_->nodes()) {
      const bool made_here = IsFused(node) && !fused_before_.count(node);
      for (Value* v : node->outputs()) {
        if (made_here) v->setType(c10::TensorType::get());
        else if (auto it = original_.find(v); it != original_.end()) v->setType(it->second);
      }
    }
  }

 private:
  std::shared_ptr<torch::jit::Graph> graph_;
  const GraphValues* recorded_;
  const std::vector<c10::IValue>& inputs_;
  bool annotated_ = false;
  std::unordered_map<Value*, c10::TypePtr> original_;
  std::unordered_set<const torch::jit::Node*> fused_before_;
};

// The added operand of a conv + add + relu match is a tensor of exactly the convolution output's
// shape, dtype and device (types from ShapeAnnotation). A number (add's Scalar overload) or a
// broadcast or promoting operand does not fold.
bool AddedOperandFits(const Match& match, const std::unordered_map<std::string, Value*>& vmap) {
  if (!vmap.count("z")) return true;
  auto conv = match.values_map.at(vmap.at("c"))->type()->cast<c10::TensorType>();
  auto z = match.values_map.at(vmap.at("z"))->type()->cast<c10::TensorType>();
  if (!conv || !z) return false;
  const auto conv_sizes = conv->sizes().concrete_sizes(), z_sizes = z->sizes().concrete_sizes();
  return conv_sizes && z_sizes && *conv_sizes == *z_sizes && conv->scalarType() && conv->scalarType() == z->scalarType() &&
         conv->device() && conv->device() == z->device();
}

}  // namespace

namespace {

// `recorded`: a run of `graph` as it is now, or nullptr to run it when a candidate needs shapes.
int Fold(std::shared_ptr<torch::jit::Graph>& graph, const GraphValues* recorded,
         const std::vector<c10::IValue>& example_inputs) {
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
  if (recorded && !recorded->Fits(*graph)) recorded = nullptr;  // new nodes: run the graph as it is now
  ShapeAnnotation shapes(graph, recorded, example_inputs);
  auto fusable = [&](const Match& match, const std::unordered_map<std::string, Value*>& vmap) {
    if (!FusableConstants(match, vmap)) return false;
    shapes.EnsureAnnotated();  // before the first rewrite: the first filter call precedes it
    return AddedOperandFits(match, vmap);
  };
  try {
    rewriter.runOnGraph(graph, fusable);
  } catch (...) {
    shapes.Restore();
    throw;
  }
  shapes.Restore();
  return CountFused(*graph) - before;
}

}  // namespace

int FoldConvolutionAddRelu(std::shared_ptr<torch::jit::Graph>& graph, const std::vector<c10::IValue>& example_inputs) {
  return Fold(graph, nullptr, example_inputs);
}

int FoldConvolutionAddRelu(std::shared_ptr<torch::jit::Graph>& graph, const GraphValues& values) {
  values.CheckFits(*graph, "FoldConvolutionAddRelu");
  return Fold(graph, &values, values.inputs());
}

}  // namespace autograph
