// Which linears of an imported graph can run as one merged linear (merged_linear.h), and their
// merged weights, read from the lowered graph's frozen constants.
#include <torch/csrc/jit/ir/ir.h>

#include <algorithm>
#include <tuple>

#include "autograph/error.h"
#include "autograph/merged_linear.h"
#include "graph_pass/mergeable_ops.h"
#include "graph_pass/sibling_linears.h"

namespace autograph {

namespace {

// Op `id` as a linear that can take part in a merge, or why not.
std::optional<SiblingLinear> ReadLinear(const OpGraph& graph, int id, std::string* why) {
  const torch::jit::Node* anchor = graph.node(id).anchor;
  const std::string who = OpLabel(graph, id);
  if (!anchor || anchor->kind() != c10::aten::linear) {
    *why = who + " is not an aten::linear";
    return std::nullopt;
  }
  auto linear = AsSiblingLinear(const_cast<torch::jit::Node*>(anchor), anchor->input(0), *graph.graph());
  if (!linear) {
    *why = who + " has a weight or bias computed at run time, or an output written in place; only linears with "
                 "frozen weights whose outputs may become slices merge";
    return std::nullopt;
  }
  return linear;
}

bool ReadMergeable(const OpGraph& graph, const std::vector<int>& ops, std::vector<SiblingLinear>* linears,
                   std::string* why) {
  *why = OpListProblem(graph, ops, "a merged linear");
  if (!why->empty()) return false;
  for (int id : ops) {
    auto linear = ReadLinear(graph, id, why);
    if (!linear) return false;
    linears->push_back(std::move(*linear));
  }
  const SiblingLinear& first = linears->front();
  for (size_t i = 1; i < ops.size(); ++i) {
    const SiblingLinear& l = (*linears)[i];
    const std::string who = OpLabel(graph, ops[i]), first_label = OpLabel(graph, ops[0]);
    if (l.node->input(0) != first.node->input(0)) {
      *why = who + " reads %" + l.node->input(0)->debugName() + ", but " + first_label + " reads %" +
             first.node->input(0)->debugName() + "; merged linears share one input";
      return false;
    }
    if (l.weight.size(1) != first.weight.size(1) || l.weight.scalar_type() != first.weight.scalar_type() ||
        l.weight.device() != first.weight.device()) {
      *why = who + " has a weight of " + std::to_string(l.weight.size(1)) + " in-features (" +
             c10::toString(l.weight.scalar_type()) + ", " + l.weight.device().str() + "), " + first_label + " of " +
             std::to_string(first.weight.size(1)) + " (" + c10::toString(first.weight.scalar_type()) + ", " +
             first.weight.device().str() + ")";
      return false;
    }
  }
  *why = PathProblem(graph, ops);
  return why->empty();
}

}  // namespace

std::vector<std::vector<int>> MergeableLinearClasses(const OpGraph& graph) {
  // By what one GEMM needs to agree on: input Value, weight dtype, device, in-features.
  using Key = std::tuple<const torch::jit::Value*, int, std::string, int64_t>;
  return MergeClassesBy(graph, [&](int id) -> std::optional<Key> {
    std::string why;
    auto linear = ReadLinear(graph, id, &why);
    if (!linear) return std::nullopt;
    return Key(linear->node->input(0), static_cast<int>(linear->weight.scalar_type()), linear->weight.device().str(),
               linear->weight.size(1));
  });
}

bool CanMergeLinears(const OpGraph& graph, const std::vector<int>& ops, std::string* why) {
  std::vector<SiblingLinear> linears;
  std::string reason;
  const bool ok = ReadMergeable(graph, ops, &linears, &reason);
  if (why) *why = ok ? "" : reason;
  return ok;
}

MergedLinear MergeLinearOps(const OpGraph& graph, const std::vector<int>& ops) {
  std::vector<SiblingLinear> linears;
  std::string why;
  if (!ReadMergeable(graph, ops, &linears, &why)) throw Error("cannot merge these linears: " + why);
  std::vector<at::Tensor> weights;
  std::vector<std::optional<at::Tensor>> biases;
  for (const SiblingLinear& l : linears) {
    weights.push_back(l.weight);
    biases.push_back(l.bias.defined() ? std::optional<at::Tensor>(l.bias) : std::nullopt);
  }
  return MergeLinears(weights, biases);
}

}  // namespace autograph
