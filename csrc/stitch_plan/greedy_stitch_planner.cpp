#include "stitch_plan/greedy_stitch_planner.h"

#include <algorithm>
#include <map>
#include <unordered_map>

namespace autograph::stitch_planner {

GreedyStitchPlanner::GreedyStitchPlanner(const StitchGraph& graph, const Dag& dag, const StitchPlanOptions& options,
                                         const std::vector<int>& start, const std::vector<char>& movable)
    : graph_(graph), options_(options) {
  const int n = static_cast<int>(graph.nodes.size());
  parent_.resize(n);
  version_.assign(n, 0);
  split_.resize(n);
  weight_.resize(n);
  movable_.resize(n);
  uses_.resize(n);
  apart_.resize(n);
  descendants_.assign(n, Bitset(n));
  ancestors_.assign(n, Bitset(n));
  for (int v = 0; v < n; ++v) {
    parent_[v] = v;
    split_[v] = graph.nodes[v].split;
    weight_[v] = graph.nodes[v].weight;
    movable_[v] = graph.nodes[v].stitchable && movable[v];
    if (!graph.nodes[v].stitchable) continue;
    for (int t : dag.tensors_of[v]) {
      const StitchTensor& tensor = graph.tensors[t];
      const int readers = static_cast<int>(std::count(tensor.consumers.begin(), tensor.consumers.end(), v));
      uses_[v].push_back({t, readers, tensor.producer == v});
    }
  }
  for (const auto& [a, b] : graph.apart) {
    apart_[a].push_back(b);
    apart_[b].push_back(a);
  }
  for (int v = n; v-- > 0;)
    for (int c : dag.succ[v]) descendants_[v].Set(c), descendants_[v] |= descendants_[c];
  for (int v = 0; v < n; ++v)
    for (int p : dag.pred[v]) ancestors_[v].Set(p), ancestors_[v] |= ancestors_[p];
  // Rebuild the starting groups node by node in id order: every intermediate state is then a
  // feasible contraction too (a later member can never lie on a path back to an earlier one).
  std::unordered_map<int, int> first_of_label;
  for (int v = 0; v < n; ++v) {
    if (!graph.nodes[v].stitchable) continue;
    auto [it, inserted] = first_of_label.emplace(start[v], v);
    if (!inserted) Merge(Group(it->second), v);
  }
}

std::vector<int> GreedyStitchPlanner::Run() {
  const int n = static_cast<int>(graph_.nodes.size());
  for (int v = 0; v < n; ++v)
    if (movable_[v] && Group(v) == v) PushCandidates(v);
  while (true) {
    while (!heap_.empty()) {
      const Candidate best = heap_.top();
      heap_.pop();
      if (Group(best.a) != best.a || Group(best.b) != best.b) continue;
      if (version_[best.a] != best.version_a || version_[best.b] != best.version_b) continue;
      if (!CanMerge(best.a, best.b)) continue;
      Merge(best.a, best.b);
      PushCandidates(best.a);
    }
    // Groups that share no tensor save one launch each when merged (horizontal fusion).
    if (!(options_.launch_us > 0) || !MergeUnrelated()) break;
  }
  std::vector<int> group_of(n, -1);
  for (int v = 0; v < n; ++v)
    if (graph_.nodes[v].stitchable) group_of[v] = Group(v);
  return group_of;
}

bool GreedyStitchPlanner::CanMerge(int a, int b) {
  if (!movable_[a] || !movable_[b]) return false;
  if (graph_.nodes[a].domain != graph_.nodes[b].domain || !SplitsCompatible(split_[a], split_[b])) return false;
  if (weight_[a] + weight_[b] > options_.max_weight) return false;
  for (int x : apart_[a])
    if (Group(x) == b) return false;
  // A path a -> c -> b through another group c (or back) would become a cycle.
  return !descendants_[a].Intersects(ancestors_[b]) && !descendants_[b].Intersects(ancestors_[a]);
}

double GreedyStitchPlanner::Gain(int a, int b) const {
  const std::vector<TensorUse>& ua = uses_[a];
  const std::vector<TensorUse>& ub = uses_[b];
  int64_t saved = 0;
  for (size_t i = 0, j = 0; i < ua.size() && j < ub.size();) {
    if (ua[i].tensor != ub[j].tensor) {
      ua[i].tensor < ub[j].tensor ? ++i : ++j;
      continue;
    }
    const TensorUse& x = ua[i++];
    const TensorUse& y = ub[j++];
    const StitchTensor& tensor = graph_.tensors[x.tensor];
    // Reads: the reader group joins the producer's, or two reader groups become one.
    if ((x.produces && y.readers) || (y.produces && x.readers) || (x.readers && y.readers)) saved += tensor.bytes;
    // Write: saved when the merged group holds every reader (and it is no graph output).
    const int readers = x.readers + y.readers;
    if ((x.produces || y.produces) && !tensor.graph_output && readers == static_cast<int>(tensor.consumers.size()))
      saved += tensor.bytes;
  }
  return options_.launch_us + static_cast<double>(saved) / options_.bytes_per_us;
}

void GreedyStitchPlanner::PushCandidates(int a) {
  std::vector<int> neighbours;
  for (const TensorUse& use : uses_[a]) {
    const StitchTensor& tensor = graph_.tensors[use.tensor];
    if (tensor.producer >= 0 && movable_[tensor.producer]) neighbours.push_back(Group(tensor.producer));
    for (int c : tensor.consumers)
      if (movable_[c]) neighbours.push_back(Group(c));
  }
  std::sort(neighbours.begin(), neighbours.end());
  neighbours.erase(std::unique(neighbours.begin(), neighbours.end()), neighbours.end());
  for (int b : neighbours) {
    if (b == a || !CanMerge(a, b)) continue;
    const int lo = std::min(a, b), hi = std::max(a, b);
    const double gain = Gain(lo, hi);
    if (gain > 0) heap_.push({gain, lo, hi, version_[lo], version_[hi]});
  }
}

bool GreedyStitchPlanner::MergeUnrelated() {
  std::map<int, std::vector<int>> by_domain;
  for (size_t v = 0; v < graph_.nodes.size(); ++v)
    if (movable_[v] && Group(static_cast<int>(v)) == static_cast<int>(v))
      by_domain[graph_.nodes[v].domain].push_back(static_cast<int>(v));
  std::vector<int> changed;
  for (const auto& [domain, groups] : by_domain)
    for (size_t i = 0; i < groups.size(); ++i) {
      if (Group(groups[i]) != groups[i]) continue;
      bool grew = false;
      for (size_t j = i + 1; j < groups.size(); ++j)
        if (Group(groups[j]) == groups[j] && CanMerge(groups[i], groups[j])) Merge(groups[i], groups[j]), grew = true;
      if (grew) changed.push_back(groups[i]);
    }
  for (int a : changed) PushCandidates(a);
  return !changed.empty();
}

void GreedyStitchPlanner::Merge(int a, int b) {
  parent_[b] = a;
  ++version_[a];
  ++version_[b];
  if (split_[a] == -1) split_[a] = split_[b];
  weight_[a] += weight_[b];
  apart_[a].insert(apart_[a].end(), apart_[b].begin(), apart_[b].end());
  std::vector<int>().swap(apart_[b]);
  std::vector<TensorUse> uses;
  const std::vector<TensorUse>& ua = uses_[a];
  const std::vector<TensorUse>& ub = uses_[b];
  size_t i = 0, j = 0;
  while (i < ua.size() || j < ub.size()) {
    if (j == ub.size() || (i < ua.size() && ua[i].tensor < ub[j].tensor)) {
      uses.push_back(ua[i++]);
    } else if (i == ua.size() || ub[j].tensor < ua[i].tensor) {
      uses.push_back(ub[j++]);
    } else {
      uses.push_back({ua[i].tensor, ua[i].readers + ub[j].readers, ua[i].produces || ub[j].produces});
      ++i, ++j;
    }
  }
  uses_[a].swap(uses);
  std::vector<TensorUse>().swap(uses_[b]);
  // Rename b to a wherever b was reachable or reaching, then close reachability through a.
  ancestors_[b].ForEach([&](int x) { descendants_[x].Reset(b), descendants_[x].Set(a); });
  descendants_[b].ForEach([&](int y) { ancestors_[y].Reset(b), ancestors_[y].Set(a); });
  descendants_[a] |= descendants_[b];
  ancestors_[a] |= ancestors_[b];
  descendants_[a].Reset(a), descendants_[a].Reset(b);
  ancestors_[a].Reset(a), ancestors_[a].Reset(b);
  descendants_[b].Release();
  ancestors_[b].Release();
  ancestors_[a].ForEach([&](int x) { descendants_[x] |= descendants_[a]; });
  descendants_[a].ForEach([&](int y) { ancestors_[y] |= ancestors_[a]; });
}

}  // namespace autograph::stitch_planner
