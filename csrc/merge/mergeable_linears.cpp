// Which linears of an imported graph can run as one merged linear (merged_linear.h), and their
// merged weights, from the merge candidates the import described (OpNode::merge).
#include <algorithm>
#include <tuple>

#include "autograph/error.h"
#include "merge/mergeable_ops.h"
#include "merge/merged_linear.h"

namespace autograph {

namespace {

// Op `id` as a linear that can take part in a merge, or why not.
const MergeCandidate* ReadLinear(const OpGraph& graph, int id, std::string* why) {
  const OpNode& op = graph.node(id);
  if (op.merge.kind == MergeCandidate::Kind::Linear) return &op.merge;
  if (op.op != "aten::linear" || op.merge.problem.empty()) {
    *why = OpLabel(graph, id) + " is not an aten::linear";
  } else {
    *why = op.merge.problem;
  }
  return nullptr;
}

// Linears merge when one GEMM can run them: the same in-features, weight dtype and device.
const MergeRules& LinearRules() {
  static const MergeRules rules{
      "merged linear", "linears", ReadLinear,
      [](const std::string& who, const MergeCandidate& l, const std::string& first_label, const MergeCandidate& first) {
        if (l.weight.size(1) == first.weight.size(1) && l.weight.scalar_type() == first.weight.scalar_type() &&
            l.weight.device() == first.weight.device())
          return std::string();
        return who + " has a weight of " + std::to_string(l.weight.size(1)) + " in-features (" +
               c10::toString(l.weight.scalar_type()) + ", " + l.weight.device().str() + "), " + first_label + " of " +
               std::to_string(first.weight.size(1)) + " (" + c10::toString(first.weight.scalar_type()) + ", " +
               first.weight.device().str() + ")";
      },
      nullptr};
  return rules;
}

}  // namespace

std::vector<std::vector<int>> MergeableLinearClasses(const OpGraph& graph) {
  // By what one GEMM needs to agree on: input Value, weight dtype, device, in-features.
  using Key = std::tuple<int64_t, int, std::string, int64_t>;
  return MergeClassesBy(graph, [&](int id) -> std::optional<Key> {
    const MergeCandidate& linear = graph.node(id).merge;
    if (linear.kind != MergeCandidate::Kind::Linear) return std::nullopt;
    return Key(linear.input, static_cast<int>(linear.weight.scalar_type()), linear.weight.device().str(),
               linear.weight.size(1));
  });
}

bool CanMergeLinears(const OpGraph& graph, const std::vector<int>& ops, std::string* why) {
  return CanMergeWith(graph, ops, LinearRules(), why);
}

MergedLinear MergeLinearOps(const OpGraph& graph, const std::vector<int>& ops) {
  std::vector<at::Tensor> weights;
  std::vector<std::optional<at::Tensor>> biases;
  for (const MergeCandidate* l : MergeCandidatesOf(graph, ops, LinearRules())) {
    weights.push_back(l->weight);
    biases.push_back(l->bias);
  }
  return MergeLinears(weights, biases);
}

}  // namespace autograph
