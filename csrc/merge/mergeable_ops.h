#pragma once
// What every kind of merged kernel (convolutions, linears) asks of its operators, apart from what
// they compute: a list of >= 2 distinct ops of the graph, no path between any two of them (one
// kernel runs them at once), and classes split where a path connects members.
#include <algorithm>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "core/op_graph.h"

namespace autograph {

// Whether a path leads from op `from` to op `to` (ids are topological: from < to is necessary).
bool Reaches(const OpGraph& graph, int from, int to);

// "" when `ops` lists at least 2 distinct ops of the graph; else why not. `kernel` names the merged
// kernel in the message ("a merged convolution").
std::string OpListProblem(const OpGraph& graph, const std::vector<int>& ops, const std::string& kernel);

// "" when no op of `ops` depends on another through the graph; else which one does.
std::string PathProblem(const OpGraph& graph, const std::vector<int>& ops);

// What one kind of merged kernel asks of its operators, beyond what every kind asks (>= 2 distinct
// ops, one input value, no path between any two).
struct MergeRules {
  std::string kernel;     // "merged convolution": names the kernel in messages
  std::string operators;  // "convolutions": what it merges, in messages
  // Op `id` as a candidate of this kind, or nullptr with why not.
  std::function<const MergeCandidate*(const OpGraph& graph, int id, std::string* why)> read;
  // Why candidate `c` (labelled `who`) cannot share one kernel with the first, `first` (labelled
  // `first_label`), though it reads the same input; "" when it can. Optional.
  std::function<std::string(const std::string& who, const MergeCandidate& c, const std::string& first_label,
                            const MergeCandidate& first)>
      pair;
  // Why the candidates (in the order of `ops`) cannot form one kernel together; "" when they can. Optional.
  std::function<std::string(const OpGraph& graph, const std::vector<int>& ops,
                            const std::vector<const MergeCandidate*>& candidates)>
      together;
};

// "" when `ops` can run as one kernel of the kind `rules` describe, else why not; checked in this
// order: the op list, each op as a candidate, then per op after the first its input and `pair`, then
// `together`, then paths. `candidates` (optional) gets each op's candidate, in the order of `ops`.
std::string MergeProblem(const OpGraph& graph, const std::vector<int>& ops, const MergeRules& rules,
                         std::vector<const MergeCandidate*>* candidates = nullptr);

// MergeProblem as CanMerge* answers: whether they merge, and *why not (when `why` is given).
bool CanMergeWith(const OpGraph& graph, const std::vector<int>& ops, const MergeRules& rules, std::string* why);

// The candidates of `ops`, or Error("cannot merge these <operators>: <why>").
std::vector<const MergeCandidate*> MergeCandidatesOf(const OpGraph& graph, const std::vector<int>& ops,
                                                     const MergeRules& rules);

// Members of one class (ascending ids) split greedily into parts with no path inside (an in-place
// write between two readers of one value orders them); parts of >= 2 ops.
std::vector<std::vector<int>> SplitWhereConnected(const OpGraph& graph, const std::vector<int>& members);

// The merge classes of a graph: the compute-bound ops that `key_of(id)` accepts (an optional key;
// nullopt: not mergeable) grouped by equal keys, split where connected; classes of >= 2 ops, each
// sorted by id, ordered by their first id.
template <typename KeyOf>
std::vector<std::vector<int>> MergeClassesBy(const OpGraph& graph, KeyOf key_of) {
  using Key = typename decltype(key_of(0))::value_type;
  std::vector<std::pair<Key, std::vector<int>>> classes;
  for (int id = 0; id < graph.size(); ++id) {
    if (graph.node(id).kind != OpKind::ComputeBound) continue;
    auto key = key_of(id);
    if (!key) continue;
    auto it = std::find_if(classes.begin(), classes.end(), [&](const auto& c) { return c.first == *key; });
    if (it == classes.end()) {
      classes.emplace_back(std::move(*key), std::vector<int>{id});
    } else {
      it->second.push_back(id);
    }
  }
  std::vector<std::vector<int>> result;
  for (const auto& [key, members] : classes)
    for (auto& part : SplitWhereConnected(graph, members)) result.push_back(std::move(part));
  std::sort(result.begin(), result.end());
  return result;
}

}  // namespace autograph
