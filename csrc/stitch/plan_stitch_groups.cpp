// The stitch planner: groups of memory-intensive operators that run as one stitched kernel. Stitchable
// nodes are first split into independent subproblems; each small one is an ILP solved with GLPK, each
// large one (or one whose ILP ran out of time) goes to a greedy merger.
//
// Feasibility, as the tests and the ILP use it:
//  - a group shares one domain and one split (-1 = any), and `apart` pairs never share a group;
//  - a group of two or more nodes fits max_weight (a node heavier than the budget may still run alone:
//    it has to run somewhere);
//  - the groups, with every non-stitchable node as a group of its own, form a DAG. This implies that
//    each group is convex (no path leaves it and comes back), and also rules out two convex groups that
//    need each other (a1 -> b1 and b2 -> a2 with {a1, a2} and {b1, b2} grouped): neither kernel could
//    run first.
//
// Decomposition: two stitchable nodes "could share" a group when the pairwise rules allow it (domain,
// split, weight, apart, and no non-stitchable node on a path between them); its connected components
// hold every group. A dependence cycle between groups of different components would still couple them,
// so components joined by cycles in the graph contracted by components are one subproblem (a strongly
// connected component of that graph). Subproblems then share no cost term or constraint.
#include "stitch/plan_stitch_groups.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <queue>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#ifdef AUTOGRAPH_WITH_GLPK
#include <glpk.h>
#endif

#include "autograph/error.h"

namespace autograph {

namespace {

std::string Str(int64_t v) { return std::to_string(v); }

// --- Input checks ----------------------------------------------------------------------------------

void ValidateGraph(const StitchGraph& graph) {
  const int n = static_cast<int>(graph.nodes.size());
  for (int v = 0; v < n; ++v) {
    const StitchNode& node = graph.nodes[v];
    if (!node.stitchable) continue;
    if (node.domain < 0)
      throw InputError("stitch planner: stitchable node " + Str(v) + " has domain " + Str(node.domain) +
                       "; give every stitchable node a domain id >= 0");
    if (node.weight < 1)
      throw InputError("stitch planner: stitchable node " + Str(v) + " has weight " + Str(node.weight) +
                       "; weights count statements and must be >= 1");
  }
  for (size_t t = 0; t < graph.tensors.size(); ++t) {
    const StitchTensor& tensor = graph.tensors[t];
    if (tensor.producer < -1 || tensor.producer >= n)
      throw InputError("stitch planner: tensor " + Str(t) + " has producer " + Str(tensor.producer) +
                       "; the graph has " + Str(n) + " nodes (use -1 for a tensor made outside the graph)");
    if (tensor.bytes < 0)
      throw InputError("stitch planner: tensor " + Str(t) + " has " + Str(tensor.bytes) + " bytes; sizes must be >= 0");
    for (int c : tensor.consumers) {
      if (c < 0 || c >= n)
        throw InputError("stitch planner: tensor " + Str(t) + " has consumer " + Str(c) + "; the graph has " + Str(n) +
                         " nodes");
      if (c <= tensor.producer)
        throw InputError("stitch planner: tensor " + Str(t) + " is produced by node " + Str(tensor.producer) +
                         " and read by node " + Str(c) +
                         "; node ids must be a topological order (consumer > producer)");
    }
  }
  for (const auto& [a, b] : graph.apart) {
    if (a < 0 || a >= n || b < 0 || b >= n)
      throw InputError("stitch planner: apart pair (" + Str(a) + ", " + Str(b) + ") names a node outside 0.." +
                       Str(n - 1));
    if (a == b) throw InputError("stitch planner: apart pair (" + Str(a) + ", " + Str(b) + ") names one node twice");
  }
}

void ValidateOptions(const StitchPlanOptions& options) {
  if (!(options.bytes_per_us > 0) || !std::isfinite(options.bytes_per_us))
    throw InputError("stitch planner: bytes_per_us is " + std::to_string(options.bytes_per_us) + "; it must be > 0");
  if (!(options.launch_us >= 0) || !std::isfinite(options.launch_us))
    throw InputError("stitch planner: launch_us is " + std::to_string(options.launch_us) + "; it must be >= 0");
}

void ValidateGrouping(const StitchGraph& graph, const std::vector<int>& group_of) {
  if (group_of.size() != graph.nodes.size())
    throw InputError("stitch planner: group_of has " + Str(group_of.size()) + " entries, the graph has " +
                     Str(graph.nodes.size()) + " nodes");
}

// --- Graph helpers ---------------------------------------------------------------------------------

class Bitset {
 public:
  explicit Bitset(int bits = 0) : words_((bits + 63) / 64, 0) {}
  void Set(int i) { words_[i >> 6] |= uint64_t{1} << (i & 63); }
  void Reset(int i) { words_[i >> 6] &= ~(uint64_t{1} << (i & 63)); }
  bool Test(int i) const { return (words_[i >> 6] >> (i & 63)) & 1; }
  Bitset& operator|=(const Bitset& other) {
    for (size_t w = 0; w < words_.size(); ++w) words_[w] |= other.words_[w];
    return *this;
  }
  bool Intersects(const Bitset& other) const {
    for (size_t w = 0; w < words_.size(); ++w)
      if (words_[w] & other.words_[w]) return true;
    return false;
  }
  template <class Visit>
  void ForEach(Visit visit) const {
    for (size_t w = 0; w < words_.size(); ++w)
      for (uint64_t bits = words_[w]; bits; bits &= bits - 1) visit(static_cast<int>(w * 64 + __builtin_ctzll(bits)));
  }
  void Release() { std::vector<uint64_t>().swap(words_); }

 private:
  std::vector<uint64_t> words_;
};

// Node-level edges (deduplicated) and which tensors each node touches.
struct Dag {
  std::vector<std::vector<int>> succ, pred;
  std::vector<std::vector<int>> tensors_of;  // per node: tensors it produces or reads, ascending
};

Dag BuildDag(const StitchGraph& graph) {
  const int n = static_cast<int>(graph.nodes.size());
  Dag dag;
  dag.succ.resize(n);
  dag.pred.resize(n);
  dag.tensors_of.resize(n);
  for (size_t t = 0; t < graph.tensors.size(); ++t) {
    const StitchTensor& tensor = graph.tensors[t];
    if (tensor.producer >= 0) dag.tensors_of[tensor.producer].push_back(static_cast<int>(t));
    for (int c : tensor.consumers) {
      dag.tensors_of[c].push_back(static_cast<int>(t));
      if (tensor.producer >= 0) {
        dag.succ[tensor.producer].push_back(c);
        dag.pred[c].push_back(tensor.producer);
      }
    }
  }
  auto dedupe = [](std::vector<int>& v) {
    std::sort(v.begin(), v.end());
    v.erase(std::unique(v.begin(), v.end()), v.end());
  };
  for (int v = 0; v < n; ++v) {
    dedupe(dag.succ[v]);
    dedupe(dag.pred[v]);
    dedupe(dag.tensors_of[v]);
  }
  return dag;
}

bool SplitsCompatible(int a, int b) { return a == -1 || b == -1 || a == b; }

// Bytes a tensor moves under a grouping (group(v) = -1 for non-stitchable nodes): one write when a
// stitchable producer's group does not keep it (graph output, or a reader elsewhere), and one read per
// other group that reads it.
template <class GroupOf>
int64_t TensorTraffic(const StitchTensor& tensor, GroupOf group, std::vector<int>& scratch) {
  const int producer_group = tensor.producer >= 0 ? group(tensor.producer) : -1;
  int64_t moved = 0;
  if (producer_group >= 0) {
    bool write = tensor.graph_output;
    for (int c : tensor.consumers) write = write || group(c) != producer_group;
    if (write) moved += tensor.bytes;
  }
  scratch.clear();
  for (int c : tensor.consumers) {
    const int g = group(c);
    if (g >= 0 && g != producer_group) scratch.push_back(g);
  }
  std::sort(scratch.begin(), scratch.end());
  moved += tensor.bytes * (std::unique(scratch.begin(), scratch.end()) - scratch.begin());
  return moved;
}

// --- Cost and feasibility --------------------------------------------------------------------------

double ComputeCost(const StitchGraph& graph, const std::vector<int>& group_of, const StitchPlanOptions& options) {
  auto group = [&](int v) { return graph.nodes[v].stitchable ? group_of[v] : -1; };
  std::vector<int> labels;
  for (size_t v = 0; v < graph.nodes.size(); ++v)
    if (group(static_cast<int>(v)) >= 0) labels.push_back(group_of[v]);
  std::sort(labels.begin(), labels.end());
  const int64_t groups = std::unique(labels.begin(), labels.end()) - labels.begin();
  int64_t bytes = 0;
  std::vector<int> scratch;
  for (const StitchTensor& tensor : graph.tensors) bytes += TensorTraffic(tensor, group, scratch);
  return options.launch_us * static_cast<double>(groups) + static_cast<double>(bytes) / options.bytes_per_us;
}

bool CheckFeasible(const StitchGraph& graph, const Dag& dag, const std::vector<int>& group_of,
                   const StitchPlanOptions& options, std::string* why) {
  auto fail = [&](const std::string& message) {
    if (why) *why = message;
    return false;
  };
  const int n = static_cast<int>(graph.nodes.size());
  struct GroupInfo {
    int label, first, domain, split = -1, split_node = -1, size = 0;
    int64_t weight = 0;
  };
  std::vector<GroupInfo> groups;
  std::unordered_map<int, int> dense_of_label;
  std::vector<int> dense(n, -1);
  for (int v = 0; v < n; ++v) {
    const StitchNode& node = graph.nodes[v];
    const int label = group_of[v];
    if (!node.stitchable) {
      if (label != -1) return fail("node " + Str(v) + " is not stitchable but is in group " + Str(label));
      continue;
    }
    if (label < 0) return fail("stitchable node " + Str(v) + " has group " + Str(label) + "; every one needs a group");
    auto [it, inserted] = dense_of_label.emplace(label, static_cast<int>(groups.size()));
    if (inserted) groups.push_back({label, v, node.domain});
    GroupInfo& info = groups[it->second];
    dense[v] = it->second;
    if (node.domain != info.domain)
      return fail("group " + Str(label) + " mixes domains: node " + Str(info.first) + " has " + Str(info.domain) +
                  ", node " + Str(v) + " has " + Str(node.domain));
    if (!SplitsCompatible(info.split, node.split))
      return fail("group " + Str(label) + " mixes splits: node " + Str(info.split_node) + " has " + Str(info.split) +
                  ", node " + Str(v) + " has " + Str(node.split));
    if (node.split != -1 && info.split == -1) info.split = node.split, info.split_node = v;
    info.weight += node.weight;
    ++info.size;
  }
  for (const GroupInfo& info : groups)
    if (info.size >= 2 && info.weight > options.max_weight)
      return fail("group " + Str(info.label) + " weighs " + Str(info.weight) + ", over the budget of " +
                  Str(options.max_weight));
  for (const auto& [a, b] : graph.apart)
    if (dense[a] >= 0 && dense[a] == dense[b])
      return fail("nodes " + Str(a) + " and " + Str(b) + " must stay apart but share group " + Str(group_of[a]));

  // The contracted graph (groups, and non-stitchable nodes on their own) must be acyclic.
  const int num_groups = static_cast<int>(groups.size());
  const int vertices = num_groups + n;
  auto vertex = [&](int v) { return dense[v] >= 0 ? dense[v] : num_groups + v; };
  std::vector<std::vector<int>> succ(vertices), pred(vertices);
  std::vector<int> indegree(vertices, 0);
  for (int v = 0; v < n; ++v)
    for (int w : dag.succ[v])
      if (vertex(v) != vertex(w)) {
        succ[vertex(v)].push_back(vertex(w));
        pred[vertex(w)].push_back(vertex(v));
        ++indegree[vertex(w)];
      }
  std::vector<int> ready;
  for (int x = 0; x < vertices; ++x)
    if (indegree[x] == 0) ready.push_back(x);
  int done = 0;
  while (!ready.empty()) {
    const int x = ready.back();
    ready.pop_back();
    ++done;
    for (int y : succ[x])
      if (--indegree[y] == 0) ready.push_back(y);
  }
  if (done == vertices) return true;
  if (!why) return false;
  // Every vertex left has a predecessor left: walk backwards until one repeats to quote a cycle.
  int x = 0;
  while (indegree[x] == 0) ++x;
  std::vector<int> walk, seen_at(vertices, -1);
  while (seen_at[x] < 0) {
    seen_at[x] = static_cast<int>(walk.size());
    walk.push_back(x);
    x = *std::find_if(pred[x].begin(), pred[x].end(), [&](int p) { return indegree[p] > 0; });
  }
  std::vector<int> cycle(walk.begin() + seen_at[x], walk.end());
  std::reverse(cycle.begin(), cycle.end());
  cycle.push_back(cycle.front());
  std::string path;
  int groups_on_cycle = 0;
  for (size_t i = 0; i < cycle.size(); ++i) {
    const bool is_group = cycle[i] < num_groups;
    if (is_group && i + 1 < cycle.size()) ++groups_on_cycle;
    path +=
        (i ? " -> " : "") + (is_group ? "group " + Str(groups[cycle[i]].label) : "node " + Str(cycle[i] - num_groups));
  }
  if (groups_on_cycle == 1) return fail("a group is not convex: a path leaves it and comes back (" + path + ")");
  return fail("groups depend on each other, so no kernel of them could run first (" + path + ")");
}

// --- Decomposition ---------------------------------------------------------------------------------

// The pairwise part of the rules: whether two stitchable nodes could ever share a group.
class PairRules {
 public:
  PairRules(const StitchGraph& graph, const Dag& dag, const StitchPlanOptions& options)
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

  bool CanShare(int a, int b) const {
    const StitchNode& x = graph_.nodes[a];
    const StitchNode& y = graph_.nodes[b];
    if (!x.stitchable || !y.stitchable || x.domain != y.domain || !SplitsCompatible(x.split, y.split)) return false;
    if (int64_t{x.weight} + y.weight > max_weight_) return false;
    if (a > b) std::swap(a, b);
    if (through_fixed_[a].Test(b)) return false;  // a non-stitchable node lies on a path from a to b
    const auto& apart = apart_of_[a];
    return std::find(apart.begin(), apart.end(), b) == apart.end();
  }

  // Nodes reachable from v by a path of one edge or more.
  const Bitset& Descendants(int v) const { return descendants_[v]; }

 private:
  const StitchGraph& graph_;
  int max_weight_;
  std::vector<Bitset> descendants_;
  std::vector<Bitset> through_fixed_;  // reachable from v through a non-stitchable node
  std::vector<std::vector<int>> apart_of_;
};

int Find(std::vector<int>& parent, int v) {
  while (parent[v] != v) v = parent[v] = parent[parent[v]];
  return v;
}

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

// Independent subproblems: stitchable node ids, ascending; subproblems ordered by their first node.
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

// --- Greedy planner ---------------------------------------------------------------------------------

// Merges groups pairwise, best saving first, while the plan stays feasible. Groups are union-find sets
// named by their smallest node. Each group keeps how it uses each tensor (produces it, how many of its
// readers it holds), so a merge's saving is one walk over two short sorted lists; reachability between
// vertices of the contracted graph is kept as bitsets, so a merge is checked in O(nodes / 64) and
// applied in O(nodes^2 / 64) at worst.
class GreedyPlanner {
 public:
  // `start` must be feasible; only groups made of `movable` nodes merge further.
  GreedyPlanner(const StitchGraph& graph, const Dag& dag, const StitchPlanOptions& options,
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

  std::vector<int> Run() {
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

 private:
  struct TensorUse {
    int tensor;
    int readers;  // entries of tensor.consumers inside the group
    bool produces;
  };

  struct Candidate {
    double gain;
    int a, b, version_a, version_b;
    bool operator<(const Candidate& other) const {  // max-heap on gain; ties: smaller ids first
      if (gain != other.gain) return gain < other.gain;
      if (a != other.a) return a > other.a;
      return b > other.b;
    }
  };

  int Group(int v) { return Find(parent_, v); }

  bool CanMerge(int a, int b) {
    if (!movable_[a] || !movable_[b]) return false;
    if (graph_.nodes[a].domain != graph_.nodes[b].domain || !SplitsCompatible(split_[a], split_[b])) return false;
    if (weight_[a] + weight_[b] > options_.max_weight) return false;
    for (int x : apart_[a])
      if (Group(x) == b) return false;
    // A path a -> c -> b through another group c (or back) would become a cycle.
    return !descendants_[a].Intersects(ancestors_[b]) && !descendants_[b].Intersects(ancestors_[a]);
  }

  // Microseconds saved by merging groups a and b: a launch, plus the traffic of tensors both use.
  double Gain(int a, int b) const {
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

  void PushCandidates(int a) {
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

  // One pass over same-domain pairs of movable groups; true if anything merged.
  bool MergeUnrelated() {
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

  // Merges group b into group a (a < b, both group names).
  void Merge(int a, int b) {
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

  const StitchGraph& graph_;
  const StitchPlanOptions& options_;
  std::vector<int> parent_, version_, split_;
  std::vector<int64_t> weight_;
  std::vector<char> movable_;
  std::vector<std::vector<TensorUse>> uses_;  // per group, ascending tensor ids
  std::vector<std::vector<int>> apart_;
  std::vector<Bitset> descendants_, ancestors_;
  std::priority_queue<Candidate> heap_;
};

// --- ILP (GLPK) ------------------------------------------------------------------------------------

#ifdef AUTOGRAPH_WITH_GLPK

// Columns and rows collected first, then loaded into GLPK in one go.
class IlpModel {
 public:
  using Terms = std::vector<std::pair<int, double>>;  // (column, coefficient); column 0 = absent, skipped

  int AddBinary(double cost) { return AddColumn(GLP_BV, 0, 1, cost); }
  int AddContinuous(double lb, double ub, double cost) { return AddColumn(GLP_CV, lb, ub, cost); }
  void AddConstant(double cost) { constant_ += cost; }

  // lb <= sum(terms) (GLP_LO), sum(terms) <= ub (GLP_UP), or == (GLP_FX).
  void AddRow(Terms terms, int type, double bound) {
    terms.erase(std::remove_if(terms.begin(), terms.end(), [](const auto& t) { return t.first == 0 || t.second == 0; }),
                terms.end());
    if (terms.empty()) return;
    std::sort(terms.begin(), terms.end());
    rows_.push_back({type, bound});
    for (size_t i = 0; i < terms.size(); ++i) {
      if (i + 1 < terms.size() && terms[i + 1].first == terms[i].first) {  // GLPK rejects repeated entries
        terms[i + 1].second += terms[i].second;
        continue;
      }
      row_index_.push_back(static_cast<int>(rows_.size()));
      col_index_.push_back(terms[i].first);
      values_.push_back(terms[i].second);
    }
  }

  int columns() const { return static_cast<int>(columns_.size()); }
  int rows() const { return static_cast<int>(rows_.size()); }

  struct Result {
    bool optimal = false;
    bool has_solution = false;
    std::vector<double> values;  // per column, index 1..columns()
  };

  Result Solve(double time_limit_s) const {
    glp_prob* lp = glp_create_prob();
    glp_set_obj_dir(lp, GLP_MIN);
    glp_add_cols(lp, columns());
    for (int j = 1; j <= columns(); ++j) {
      const Column& c = columns_[j - 1];
      glp_set_col_kind(lp, j, c.kind);
      if (c.kind == GLP_CV) glp_set_col_bnds(lp, j, c.lb == c.ub ? GLP_FX : GLP_DB, c.lb, c.ub);
      glp_set_obj_coef(lp, j, c.cost);
    }
    glp_set_obj_coef(lp, 0, constant_);
    if (rows() > 0) {
      glp_add_rows(lp, rows());
      for (int i = 1; i <= rows(); ++i)
        glp_set_row_bnds(lp, i, rows_[i - 1].type, rows_[i - 1].bound, rows_[i - 1].bound);
    }
    std::vector<int> ia{0}, ja{0};
    std::vector<double> ar{0};
    ia.insert(ia.end(), row_index_.begin(), row_index_.end());
    ja.insert(ja.end(), col_index_.begin(), col_index_.end());
    ar.insert(ar.end(), values_.begin(), values_.end());
    glp_load_matrix(lp, static_cast<int>(values_.size()), ia.data(), ja.data(), ar.data());

    glp_iocp parm;
    glp_init_iocp(&parm);
    parm.msg_lev = GLP_MSG_OFF;
    parm.presolve = GLP_ON;
    parm.tm_lim = static_cast<int>(std::clamp(time_limit_s * 1000.0, 1.0, 2.0e9));
    const int previous_output = glp_term_out(GLP_OFF);
    const int ret = glp_intopt(lp, &parm);
    glp_term_out(previous_output);
    const int status = glp_mip_status(lp);
    Result result;
    result.optimal = ret == 0 && status == GLP_OPT;
    result.has_solution = status == GLP_OPT || status == GLP_FEAS;
    if (result.has_solution) {
      result.values.resize(columns() + 1);
      for (int j = 1; j <= columns(); ++j) result.values[j] = glp_mip_col_val(lp, j);
    }
    glp_delete_prob(lp);
    return result;
  }

 private:
  struct Column {
    int kind;
    double lb, ub, cost;
  };
  struct Row {
    int type;
    double bound;
  };

  int AddColumn(int kind, double lb, double ub, double cost) {
    columns_.push_back({kind, lb, ub, cost});
    return columns();
  }

  std::vector<Column> columns_;
  std::vector<Row> rows_;
  std::vector<int> row_index_, col_index_;
  std::vector<double> values_;
  double constant_ = 0;
};

struct IlpOutcome {
  bool optimal = false;
  bool has_solution = false;
  std::vector<int> group_of_member;  // per member: the node id naming its group (its smallest member)
  int columns = 0, rows = 0;
};

// The ILP of one subproblem. Group g is named by member g (the representative formulation): y[i][g]
// exists for g <= i only, y[g][g] says whether group g is used, and a member joins group g only with
// g in it, so groups are numbered by their smallest member and no two labellings are the same plan.
IlpOutcome SolveWithIlp(const StitchGraph& graph, const Dag& dag, const PairRules& rules,
                        const StitchPlanOptions& options, const std::vector<int>& members) {
  const int n = static_cast<int>(graph.nodes.size());
  const int k = static_cast<int>(members.size());
  std::vector<int> local(n, -1);
  for (int i = 0; i < k; ++i) local[members[i]] = i;
  IlpModel model;
  using Terms = IlpModel::Terms;

  std::vector<std::vector<int>> y(k, std::vector<int>(k, 0));
  for (int i = 0; i < k; ++i)
    for (int g = 0; g <= i; ++g)
      if (g == i || rules.CanShare(members[g], members[i])) y[i][g] = model.AddBinary(g == i ? options.launch_us : 0);
  auto Y = [&](int node, int g) { return local[node] >= g ? y[local[node]][g] : 0; };

  std::vector<Bitset> candidates(k, Bitset(n));  // per group: nodes that may join it
  for (int g = 0; g < k; ++g) {
    Terms one_group;
    for (int h = 0; h <= g; ++h) one_group.push_back({y[g][h], 1});
    model.AddRow(one_group, GLP_FX, 1);
    std::vector<int> joiners;
    for (int i = g; i < k; ++i)
      if (y[i][g]) candidates[g].Set(members[i]), joiners.push_back(i);
    for (size_t p = 1; p < joiners.size(); ++p) {
      const int a = joiners[p];
      model.AddRow({{y[a][g], 1}, {y[g][g], -1}}, GLP_UP, 0);  // joins only a used group
      for (size_t other = p + 1; other < joiners.size(); ++other)
        if (!rules.CanShare(members[a], members[joiners[other]]))
          model.AddRow({{y[a][g], 1}, {y[joiners[other]][g], 1}}, GLP_UP, 1);
    }
    const int room = options.max_weight - graph.nodes[members[g]].weight;
    Terms budget;
    int64_t joiner_weight = 0;
    for (size_t p = 1; p < joiners.size(); ++p) {
      budget.push_back({y[joiners[p]][g], graph.nodes[members[joiners[p]]].weight});
      joiner_weight += graph.nodes[members[joiners[p]]].weight;
    }
    budget.push_back({y[g][g], -room});
    if (joiners.size() > 1 && joiner_weight > room) model.AddRow(budget, GLP_UP, 0);  // a heavy node may run alone
  }

  // Scope: nodes on a path between two members (the only ones a path out of a group and back, or a
  // dependence cycle between groups, can pass); ids ascending.
  Bitset reached(n);
  for (int m : members) reached |= rules.Descendants(m);
  std::vector<char> reaches(n, 0);
  for (int m : members) reaches[m] = 1;
  for (int v = members.back(); v >= members.front(); --v)
    if (reaches[v])
      for (int p : dag.pred[v]) reaches[p] = 1;
  std::vector<int> scope;
  for (int v = members.front(); v <= members.back(); ++v)
    if (local[v] >= 0 || (reached.Test(v) && reaches[v])) scope.push_back(v);
  std::vector<char> in_scope(n, 0);
  for (int v : scope) in_scope[v] = 1;

  // Convexity: q[v][g] >= 1 when v is reached from group g by a path that has left g; then v may not
  // be in g. Only kept where a candidate of g is v or lies downstream.
  std::vector<std::unordered_map<int, int>> q(n);
  for (int v : scope) {
    for (int g = 0; g < k; ++g) {
      if (v <= members[g]) continue;
      bool fed = false;
      for (int p : dag.pred[v]) fed = fed || (in_scope[p] && (Y(p, g) || q[p].count(g)));
      if (!fed || !(Y(v, g) || rules.Descendants(v).Intersects(candidates[g]))) continue;
      const int column = model.AddContinuous(0, 1, 0);
      q[v][g] = column;
      for (int p : dag.pred[v]) {
        if (!in_scope[p]) continue;
        if (Y(p, g)) model.AddRow({{column, 1}, {Y(p, g), -1}, {Y(v, g), 1}}, GLP_LO, 0);
        if (q[p].count(g)) model.AddRow({{column, 1}, {q[p][g], -1}}, GLP_LO, 0);
      }
      if (Y(v, g)) model.AddRow({{Y(v, g), 1}, {column, 1}}, GLP_UP, 1);
    }
  }

  // Order: groups must be numbered so that every edge between two groups goes forward. t[v] is the
  // position of v's kernel; members of a group share it, an edge leaving a group adds one. Convex
  // groups can only form such a cycle with two groups of two members or more, so k >= 4.
  if (k >= 4) {
    const double span = static_cast<double>(scope.size());
    std::vector<int> t(n, 0);
    for (int v : scope) t[v] = model.AddContinuous(0, span, 0);
    for (int a : scope)
      for (int b : dag.succ[a]) {
        if (!in_scope[b]) continue;
        bool may_share = false;
        for (int g = 0; g < k; ++g) may_share = may_share || (Y(a, g) && Y(b, g));
        if (!may_share) {
          model.AddRow({{t[b], 1}, {t[a], -1}}, GLP_LO, 1);
          continue;
        }
        const int d = model.AddContinuous(0, 1, 0);  // d >= y[a][g] - y[b][g]: 1 across groups
        for (int g = 0; g < k; ++g)
          if (Y(a, g)) model.AddRow({{d, 1}, {Y(a, g), -1}, {Y(b, g), 1}}, GLP_LO, 0);
        model.AddRow({{t[b], 1}, {t[a], -1}, {d, -1}}, GLP_LO, 0);
      }
    for (int g = 0; g < k; ++g)
      for (int i = g + 1; i < k; ++i) {
        if (!y[i][g]) continue;
        const int tv = t[members[i]], tg = t[members[g]];
        model.AddRow({{tv, 1}, {tg, -1}, {y[i][g], span}}, GLP_UP, span);
        model.AddRow({{tg, 1}, {tv, -1}, {y[i][g], span}}, GLP_UP, span);
      }
  }

  // Traffic of every tensor a member touches.
  std::vector<int> touched;
  for (int m : members) touched.insert(touched.end(), dag.tensors_of[m].begin(), dag.tensors_of[m].end());
  std::sort(touched.begin(), touched.end());
  touched.erase(std::unique(touched.begin(), touched.end()), touched.end());
  for (int index : touched) {
    const StitchTensor& tensor = graph.tensors[index];
    if (tensor.bytes == 0) continue;  // an ordering edge only
    const double cost = static_cast<double>(tensor.bytes) / options.bytes_per_us;
    const int producer = tensor.producer;
    const bool producer_inside = producer >= 0 && local[producer] >= 0;
    std::vector<int> readers;  // members that read it
    bool read_outside = false;
    for (int c : tensor.consumers) {
      if (local[c] >= 0)
        readers.push_back(c);
      else
        read_outside = true;
    }
    std::sort(readers.begin(), readers.end());
    readers.erase(std::unique(readers.begin(), readers.end()), readers.end());
    if (producer_inside) {
      if (tensor.graph_output || read_outside) {
        model.AddConstant(cost);
      } else if (!readers.empty()) {
        const int w = model.AddContinuous(0, 1, cost);  // w >= y[p][g] - y[c][g]: a reader elsewhere
        for (int g = 0; g <= local[producer]; ++g)
          if (Y(producer, g))
            for (int c : readers) model.AddRow({{w, 1}, {Y(producer, g), -1}, {Y(c, g), 1}}, GLP_LO, 0);
      }
    }
    if (readers.empty()) continue;
    if (!producer_inside && readers.size() == 1) {
      model.AddConstant(cost);
      continue;
    }
    for (int g = 0; g < k; ++g) {  // r >= y[c][g] - y[p][g]: group g reads it from memory
      int r = 0;
      for (int c : readers) {
        if (!Y(c, g)) continue;
        if (!r) r = model.AddContinuous(0, 1, cost);
        model.AddRow({{r, 1}, {Y(c, g), -1}, {producer_inside ? Y(producer, g) : 0, 1}}, GLP_LO, 0);
      }
    }
  }

  IlpOutcome outcome;
  outcome.columns = model.columns();
  outcome.rows = model.rows();
  const IlpModel::Result result = model.Solve(options.ilp_time_limit_s);
  outcome.optimal = result.optimal;
  outcome.has_solution = result.has_solution;
  if (!result.has_solution) return outcome;
  outcome.group_of_member.assign(k, -1);
  for (int i = 0; i < k; ++i)
    for (int g = 0; g <= i; ++g)
      if (y[i][g] && result.values[y[i][g]] > 0.5) outcome.group_of_member[i] = members[g];
  for (int label : outcome.group_of_member)
    if (label < 0) outcome.has_solution = outcome.optimal = false;
  return outcome;
}

#endif  // AUTOGRAPH_WITH_GLPK

}  // namespace

double StitchPlanCost(const StitchGraph& graph, const std::vector<int>& group_of, const StitchPlanOptions& options) {
  ValidateGraph(graph);
  ValidateOptions(options);
  ValidateGrouping(graph, group_of);
  return ComputeCost(graph, group_of, options);
}

bool StitchPlanFeasible(const StitchGraph& graph, const std::vector<int>& group_of, const StitchPlanOptions& options,
                        std::string* why) {
  ValidateGraph(graph);
  ValidateGrouping(graph, group_of);
  return CheckFeasible(graph, BuildDag(graph), group_of, options, why);
}

StitchPlan PlanStitchGroups(const StitchGraph& graph, const StitchPlanOptions& options) {
  ValidateGraph(graph);
  ValidateOptions(options);
  const int n = static_cast<int>(graph.nodes.size());
  const Dag dag = BuildDag(graph);
  const PairRules rules(graph, dag, options);
  StitchPlan plan;
  std::vector<int> group_of(n, -1);  // groups named by a member node while planning
  for (int v = 0; v < n; ++v)
    if (graph.nodes[v].stitchable) group_of[v] = v;
  std::vector<char> greedy_nodes(n, 0);
  bool any_greedy = false;

  for (const std::vector<int>& members : FindSubproblems(graph, dag, rules)) {
    if (members.size() < 2) continue;  // a lone node is its own group: nothing to plan
#ifdef AUTOGRAPH_WITH_GLPK
    if (static_cast<int>(members.size()) <= options.ilp_max_nodes) {
      const IlpOutcome outcome = SolveWithIlp(graph, dag, rules, options, members);
      std::vector<int> with_ilp = group_of;
      if (outcome.has_solution)
        for (size_t i = 0; i < members.size(); ++i) with_ilp[members[i]] = outcome.group_of_member[i];
      const bool ilp_feasible = outcome.has_solution && CheckFeasible(graph, dag, with_ilp, options, nullptr);
      if (outcome.optimal && ilp_feasible) {
        group_of.swap(with_ilp);
        ++plan.subproblems_ilp;
        continue;
      }
      // Out of time (or no usable answer): the better of the incumbent and the greedy plan.
      std::vector<char> movable(n, 0);
      for (int m : members) movable[m] = 1;
      std::vector<int> with_greedy = GreedyPlanner(graph, dag, options, group_of, movable).Run();
      if (ilp_feasible && ComputeCost(graph, with_ilp, options) < ComputeCost(graph, with_greedy, options))
        group_of.swap(with_ilp);
      else
        group_of.swap(with_greedy);
      ++plan.subproblems_greedy;
      continue;
    }
#endif
    for (int m : members) greedy_nodes[m] = 1;
    any_greedy = true;
    ++plan.subproblems_greedy;
  }
  if (any_greedy) group_of = GreedyPlanner(graph, dag, options, group_of, greedy_nodes).Run();

  // Number the groups 0.. in order of their first node.
  std::unordered_map<int, int> number_of;
  for (int v = 0; v < n; ++v)
    if (group_of[v] >= 0)
      group_of[v] = number_of.emplace(group_of[v], static_cast<int>(number_of.size())).first->second;
  std::string why;
  if (!CheckFeasible(graph, dag, group_of, options, &why))
    throw Error("stitch planner: internal error, the plan is infeasible: " + why);
  plan.group_of = std::move(group_of);
  plan.num_groups = static_cast<int>(number_of.size());
  plan.cost_us = ComputeCost(graph, plan.group_of, options);
  return plan;
}

}  // namespace autograph
