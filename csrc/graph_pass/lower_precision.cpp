#include "graph_pass/lower_precision.h"

#include <torch/csrc/jit/ir/alias_analysis.h>
#include <torch/csrc/jit/ir/ir.h>

#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "autograph/error.h"
#include "graph_pass/graph_values.h"

namespace autograph {
namespace {

using torch::jit::Node;
using torch::jit::Value;

// Autocast's lower-precision list for matrix products and convolutions, by ATen name.
bool IsLoweredKind(c10::Symbol kind) {
  static const std::unordered_set<std::string> names = {
      "aten::conv1d", "aten::conv2d", "aten::conv3d", "aten::convolution", "aten::_convolution",
      "aten::conv_transpose1d", "aten::conv_transpose2d", "aten::conv_transpose3d", "aten::linear", "aten::mm",
      "aten::addmm", "aten::bmm", "aten::baddbmm", "aten::addbmm", "aten::matmul",
      "aten::scaled_dot_product_attention"};
  return names.count(kind.toQualString()) > 0;
}

bool IsFloat32Tensor(const c10::IValue& v) { return v.isTensor() && v.toTensor().scalar_type() == at::kFloat; }

// Whether `n` returned one float32 tensor from float32 tensors alone (at least one).
bool Lowerable(const Node* n, const GraphValues& values) {
  if (!IsLoweredKind(n->kind()) || n->outputs().size() != 1) return false;
  const std::vector<c10::IValue>* in = values.InputsOf(n);
  const c10::IValue* out = values.Find(n->output());
  if (!in || in->size() != n->inputs().size() || !out || !IsFloat32Tensor(*out)) return false;
  int tensors = 0;
  for (const c10::IValue& v : *in) {
    if (!v.isTensor()) continue;
    if (v.toTensor().scalar_type() != at::kFloat || v.toTensor().layout() != at::kStrided) return false;
    ++tensors;
  }
  return tensors > 0;
}

// `v` as `dtype`, by an aten::to inserted before `at`; its type says the dtype.
Value* CastBefore(torch::jit::Graph& graph, Node* at, Value* v, c10::ScalarType dtype) {
  torch::jit::WithInsertPoint point(at);
  Value* cast = graph.insert(c10::aten::to, {v, static_cast<int64_t>(dtype)});
  if (auto type = v->type()->cast<c10::TensorType>()) cast->setType(type->withScalarType(dtype));
  return cast;
}

}  // namespace

c10::ScalarType LoweredDtype(const std::string& precision) {
  if (precision == "bf16") return at::kBFloat16;
  if (precision == "fp16") return at::kHalf;
  throw Error("LoweredDtype: '" + precision + "' is not a precision below float32 (bf16, fp16)");
}

std::vector<Node*> LowerableOperators(torch::jit::Graph& graph, const GraphValues& values) {
  std::vector<Node*> found;
  for (Node* n : graph.nodes())
    if (Lowerable(n, values)) found.push_back(n);
  return found;
}

int LowerMatmulsAndConvolutions(std::shared_ptr<torch::jit::Graph>& graph, const GraphValues& values,
                                c10::ScalarType dtype, const std::vector<bool>* chosen) {
  const std::vector<Node*> lowerable = LowerableOperators(*graph, values);
  if (chosen && chosen->size() != lowerable.size())
    throw Error("LowerMatmulsAndConvolutions: a choice of " + std::to_string(chosen->size()) + " operators for " +
                std::to_string(lowerable.size()) + " lowerable ones");
  std::vector<Node*> lowered;
  for (size_t i = 0; i < lowerable.size(); ++i)
    if (!chosen || (*chosen)[i]) lowered.push_back(lowerable[i]);
  if (lowered.empty()) return 0;
  torch::jit::AliasDb aliases(graph);  // of the graph as it was: asked about its own values below
  std::unordered_map<Value*, Value*> origin;  // a result cast back to float32: the operator's own output
  std::unordered_map<Value*, Value*> shared;  // an operand never written in place: its one cast
  std::unordered_map<Node*, Value*> constants;  // a constant weight's node: the lowered copy
  for (Node* n : lowered) {
    for (size_t i = 0; i < n->inputs().size(); ++i) {
      Value* v = n->input(i);
      if (!(*values.InputsOf(n))[i].isTensor()) continue;
      Node* source = v->node();
      if (source->kind() == c10::prim::Constant) {
        auto it = constants.find(source);
        if (it == constants.end()) {
          torch::jit::WithInsertPoint point(source);
          Value* copy = graph->insertConstant(values.TensorOf(v).to(dtype));
          it = constants.emplace(source, copy).first;
        }
        n->replaceInput(i, it->second);
      } else if (aliases.hasWriters(origin.count(v) ? origin.at(v) : v)) {
        n->replaceInput(i, CastBefore(*graph, n, v, dtype));
      } else {
        auto it = shared.find(v);
        if (it == shared.end()) it = shared.emplace(v, CastBefore(*graph, n, v, dtype)).first;
        n->replaceInput(i, it->second);
      }
    }
    Value* out = n->output();
    Value* back = CastBefore(*graph, n->next(), out, at::kFloat);
    out->replaceAllUsesAfterNodeWith(back->node(), back);
    origin.emplace(back, out);
    if (auto type = out->type()->cast<c10::TensorType>()) out->setType(type->withScalarType(dtype));
  }
  // The float32 constants nothing reads any more.
  for (const auto& [source, _] : constants)
    if (!source->output()->hasUses()) source->destroy();
  return static_cast<int>(lowered.size());
}

}  // namespace autograph
