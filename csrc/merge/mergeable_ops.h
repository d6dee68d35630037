#pragma once
// What every kind of merged kernel (convolutions, linears) asks of its operators, apart from what
// they compute: a list of >= 2 distinct ops of the graph, no path between any two of them (one
// kernel runs them at once), and classes split where a path connects members.
#include <algorithm>
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
