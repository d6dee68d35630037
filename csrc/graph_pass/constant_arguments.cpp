#include "graph_pass/constant_arguments.h"

#include <torch/csrc/jit/ir/constants.h>
#include <torch/csrc/jit/ir/ir.h>

namespace autograph {

std::optional<c10::IValue> ConstantOf(torch::jit::Value* v) {
  torch::jit::Node* n = v->node();
  if (n->kind() == c10::prim::Constant) return torch::jit::toIValue(v);
  if (n->kind() == c10::prim::ListConstruct) {
    c10::List<int64_t> list;
    for (torch::jit::Value* element : n->inputs()) {
      auto c = ConstantOf(element);
      if (!c || !c->isInt()) return std::nullopt;
      list.push_back(c->toInt());
    }
    return c10::IValue(std::move(list));
  }
  return std::nullopt;
}

std::optional<std::vector<int64_t>> ConstantInts(torch::jit::Value* v) {
  auto c = ConstantOf(v);
  if (c && c->isIntList()) return c->toIntVector();
  if (c && c->isInt()) return std::vector<int64_t>{c->toInt()};
  return std::nullopt;
}

std::optional<int64_t> ConstantInt(const torch::jit::Value* v) {
  const auto c = torch::jit::toIValue(v);
  if (!c || !c->isInt()) return std::nullopt;
  return c->toInt();
}

std::optional<double> ConstantNumber(const torch::jit::Value* v) {
  const auto c = torch::jit::toIValue(v);
  if (!c) return std::nullopt;
  if (c->isDouble()) return c->toDouble();
  if (c->isInt()) return static_cast<double>(c->toInt());
  if (c->isBool()) return c->toBool() ? 1.0 : 0.0;
  if (c->isTensor() && c->toTensor().dim() == 0 && !c->toTensor().is_complex()) return c->toTensor().item<double>();
  return std::nullopt;
}

}  // namespace autograph
