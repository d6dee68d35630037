#include "stitch_plan/stitch_subproblems.h"

#include <algorithm>
#include <cstdint>
#include <map>
#include <unordered_map>
#include <utility>

namespace autograph::stitch_planner {

namespace {

// Strongly connected components (Kosaraju, iterative): a component id per vertex.
std::vector<int> StronglyConnected(const std::vector<std::vector<int>>& succ) {
  const int n = static_cast<int>(succ.size());
  std::vector<std::vector<int>> pred(n);
  for (int v = 0; v < n; ++v)
    for (int w : succ[v]) pred[w].push_back(v);
  std::vector<int> finished;
  std::vector<char> seen(n, 0);
  std::vector<std::pair<int, size_t>> stack;
  for (int s = 0; s < n; ++s) {
    if (seen[s]) continue;
    seen[s] = 1;
    stack.push_back({s, 0});
    while (!stack.empty()) {
      const int v = stack.back().first;
      const size_t next = stack.back().second++;
      if (next < succ[v].size()) {
        const int w = succ[v][next];
        if (!seen[w]) seen[w] = 1, stack.push_back({w, 0});
      } else {
        finished.push_back(v);
        stack.pop_back();
      }
    }
  }
  std::vector<int> component(n, -1), todo;
  int count = 0;
  for (auto it = finished.rbegin(); it != finished.rend(); ++it) {
    if (component[*it] >= 0) continue;
    component[*it] = count;
    todo.push_back(*it);
    while (!todo.empty()) {
      const int v = todo.back();
      todo.pop_back();
      for (int w : pred[v])
        if (component[w] < 0) component[w] = count, todo.push_back(w);
    }
    ++count;
  }
  return component;
}

}  // namespace

PairRules::PairRules(const StitchGraph& graph, const Dag& dag, const StitchPlanOptions& options)
    : graph_(graph), max_weight_(options.max_weight) {
  const int n = static_cast<int>(graph.nodes.size());
  descendants_.assign(n, Bitset(n));
  through_fixed_.assign(n, Bitset(n));
  for (int v = n; v-- > 0;) {  // successors first: ids are a topological order
    for (int c : dag.succ[v]) {
      descendants_[v].Set(c);
      descendants_[v] |= descendants_[c];
      through_fixed_[v] |= graph.nodes[c].stitchable ? through_fixed_[c] : descendants_[c];
    }
  }
  apart_of_.resize(n);
  for (const auto& [a, b] : graph.apart) {
    apart_of_[a].push_back(b);
    apart_of_[b].push_back(a);
  }
}

bool PairRules::CanShare(int a, int b) const {
  const StitchNode& x = graph_.nodes[a];
  const StitchNode& y = graph_.nodes[b];
  if (!x.stitchable || !y.stitchable || x.domain != y.domain || !SplitsCompatible(x.split, y.split)) return false;
  if (int64_t{x.weight} + y.weight > max_weight_) return false;
  if (a > b) std::swap(a, b);
  if (through_fixed_[a].Test(b)) return false;  // a non-stitchable node lies on a path from a to b
  const auto& apart = apart_of_[a];
  return std::find(apart.begin(), apart.end(), b) == apart.end();
}

std::vector<std::vector<int>> FindSubproblems(const StitchGraph& graph, const Dag& dag, const PairRules& rules) {
  const int n = static_cast<int>(graph.nodes.size());
  std::vector<int> parent(n);
  for (int v = 0; v < n; ++v) parent[v] = v;
  std::map<int, std::vector<int>> by_domain;
  for (int v = 0; v < n; ++v)
    if (graph.nodes[v].stitchable) by_domain[graph.nodes[v].domain].push_back(v);
  for (const auto& [domain, nodes] : by_domain)
    for (size_t i = 0; i < nodes.size(); ++i)
      for (size_t j = i + 1; j < nodes.size(); ++j) {
        const int a = Find(parent, nodes[i]), b = Find(parent, nodes[j]);
        if (a != b && rules.CanShare(nodes[i], nodes[j])) parent[std::max(a, b)] = std::min(a, b);
      }
  // Contract each could-share component to one vertex (its root); non-stitchable nodes stay.
  std::vector<std::vector<int>> contracted(n);
  for (int v = 0; v < n; ++v) {
    const int from = graph.nodes[v].stitchable ? Find(parent, v) : v;
    for (int w : dag.succ[v]) {
      const int to = graph.nodes[w].stitchable ? Find(parent, w) : w;
      if (from != to) contracted[from].push_back(to);
    }
  }
  const std::vector<int> scc = StronglyConnected(contracted);
  std::vector<std::vector<int>> subproblems;
  std::unordered_map<int, int> index_of_scc;
  for (int v = 0; v < n; ++v) {
    if (!graph.nodes[v].stitchable) continue;
    auto [it, inserted] = index_of_scc.emplace(scc[Find(parent, v)], static_cast<int>(subproblems.size()));
    if (inserted) subproblems.emplace_back();
    subproblems[it->second].push_back(v);
  }
  return subproblems;
}

}  // namespace autograph::stitch_planner
