#include "merge/mergeable_ops.h"

#include <algorithm>
#include <set>

#include "autograph/error.h"

namespace autograph {

bool Reaches(const OpGraph& graph, int from, int to) {
  if (from >= to) return false;
  std::vector<bool> seen(to + 1, false);
  std::vector<int> stack{from};
  while (!stack.empty()) {
    const int u = stack.back();
    stack.pop_back();
    for (int v : graph.succs(u)) {
      if (v == to) return true;
      if (v < to && !seen[v]) {
        seen[v] = true;
        stack.push_back(v);
      }
    }
  }
  return false;
}

std::string OpListProblem(const OpGraph& graph, const std::vector<int>& ops, const std::string& kernel) {
  if (ops.size() < 2) return kernel + " needs at least 2 operators, got " + std::to_string(ops.size());
  std::set<int> seen;
  for (int id : ops) {
    if (id < 0 || id >= graph.size())
      return "op " + std::to_string(id) + " is not in the graph (ids 0.." + std::to_string(graph.size() - 1) + ")";
    if (!seen.insert(id).second) return OpLabel(graph, id) + " is listed twice";
  }
  return "";
}

std::string PathProblem(const OpGraph& graph, const std::vector<int>& ops) {
  for (int from : ops)
    for (int to : ops)
      if (Reaches(graph, from, to))
        return OpLabel(graph, to) + " depends on " + OpLabel(graph, from) +
               " through the graph (e.g. an in-place write between them), so they cannot run as one kernel";
  return "";
}

std::vector<std::vector<int>> SplitWhereConnected(const OpGraph& graph, const std::vector<int>& members) {
  std::vector<std::vector<int>> parts;
  for (int id : members) {
    auto fits = [&](const std::vector<int>& part) {
      return std::none_of(part.begin(), part.end(), [&](int other) { return Reaches(graph, other, id); });
    };
    auto part = std::find_if(parts.begin(), parts.end(), fits);
    if (part == parts.end()) {
      parts.push_back({id});
    } else {
      part->push_back(id);
    }
  }
  parts.erase(std::remove_if(parts.begin(), parts.end(), [](const auto& p) { return p.size() < 2; }), parts.end());
  return parts;
}

std::string MergeProblem(const OpGraph& graph, const std::vector<int>& ops, const MergeRules& rules,
                         std::vector<const MergeCandidate*>* candidates) {
  std::string why = OpListProblem(graph, ops, "a " + rules.kernel);
  if (!why.empty()) return why;
  std::vector<const MergeCandidate*> read;
  for (int id : ops) {
    const MergeCandidate* c = rules.read(graph, id, &why);
    if (!c) return why;
    read.push_back(c);
  }
  const MergeCandidate& first = *read.front();
  const std::string first_label = OpLabel(graph, ops[0]);
  for (size_t i = 1; i < ops.size(); ++i) {
    const MergeCandidate& c = *read[i];
    const std::string who = OpLabel(graph, ops[i]);
    if (c.input != first.input) {
      return who + " reads " + c.input_name + ", but " + first_label + " reads " + first.input_name + "; " +
             rules.kernel + "s share one input";
    }
    why = rules.pair ? rules.pair(who, c, first_label, first) : "";
    if (!why.empty()) return why;
  }
  why = rules.together ? rules.together(graph, ops, read) : "";
  if (!why.empty()) return why;
  why = PathProblem(graph, ops);
  if (why.empty() && candidates) *candidates = std::move(read);
  return why;
}

bool CanMergeWith(const OpGraph& graph, const std::vector<int>& ops, const MergeRules& rules, std::string* why) {
  const std::string reason = MergeProblem(graph, ops, rules);
  if (why) *why = reason;
  return reason.empty();
}

std::vector<const MergeCandidate*> MergeCandidatesOf(const OpGraph& graph, const std::vector<int>& ops,
                                                     const MergeRules& rules) {
  std::vector<const MergeCandidate*> candidates;
  const std::string why = MergeProblem(graph, ops, rules, &candidates);
  if (!why.empty()) throw Error("cannot merge these " + rules.operators + ": " + why);
  return candidates;
}

}  // namespace autograph
