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

bool ReadMergeable(const OpGraph& graph, const std::vector<int>& ops, std::vector<MergeCandidate>* linears,
                   std::string* why) {
  *why = OpListProblem(graph, ops, "a merged linear");
  if (!why->empty()) return false;
  for (int id : ops) {
    const MergeCandidate* linear = ReadLinear(graph, id, why);
    if (!linear) return false;
    linears->push_back(*linear);
  }
  const MergeCandidate& first = linears->front();
  for (size_t i = 1; i < ops.size(); ++i) {
    const MergeCandidate& l = (*linears)[i];
    const std::string who = OpLabel(graph, ops[i]), first_label = OpLabel(graph, ops[0]);
    if (l.input != first.input) {
      *why = who + " reads " + l.input_name + ", but " + first_label + " reads " + first.input_name +
             "; merged linears share one input";
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
  using Key = std::tuple<int64_t, int, std::string, int64_t>;
  return MergeClassesBy(graph, [&](int id) -> std::optional<Key> {
    const MergeCandidate& linear = graph.node(id).merge;
    if (linear.kind != MergeCandidate::Kind::Linear) return std::nullopt;
    return Key(linear.input, static_cast<int>(linear.weight.scalar_type()), linear.weight.device().str(),
               linear.weight.size(1));
  });
}

bool CanMergeLinears(const OpGraph& graph, const std::vector<int>& ops, std::string* why) {
  std::vector<MergeCandidate> linears;
  std::string reason;
  const bool ok = ReadMergeable(graph, ops, &linears, &reason);
  if (why) *why = ok ? "" : reason;
  return ok;
}

MergedLinear MergeLinearOps(const OpGraph& graph, const std::vector<int>& ops) {
  std::vector<MergeCandidate> linears;
  std::string why;
  if (!ReadMergeable(graph, ops, &linears, &why)) throw Error("cannot merge these linears: " + why);
  std::vector<at::Tensor> weights;
  std::vector<std::optional<at::Tensor>> biases;
  for (const MergeCandidate& l : linears) {
    weights.push_back(l.weight);
    biases.push_back(l.bias);
  }
  return MergeLinears(weights, biases);
}

}  // namespace autograph
