// PartitionByMinCut: recursive bisection by minimum s-t cuts, then neighbouring blocks merged while
// they fit. Cuts go where few bytes cross, so the ops that could run side by side (the branches of a
// cell) tend to stay in one block, and the schedule search loses little by working block by block.
//
// Splitting a convex part P (no path leaves P and comes back) of m > K = max_block_ops operators.
//
// The network. One vertex per op of P, a source s and a sink t, and one vertex x_u per tensor: for
// each op u of P with a successor in P, an arc u -> x_u of capacity w(u) = max(1, bytes_written(u))
// and arcs x_u -> v of infinite capacity for each successor v of u in P. A cut that separates u from
// some of its consumers cuts u -> x_u and pays w(u) once, however many consumers lie beyond it: the
// tensor is written once whoever reads it. Every edge u -> v of P also gets an infinite reverse arc
// v -> u. (Tensors from outside P cross whatever the cut is, so they are left out.)
//
// Both sides are convex. A finite cut (S, T) cuts no infinite arc, so for an edge u -> v of P with v
// in S the arc v -> u puts u in S: A = S ∩ P is closed under predecessors within P, i.e. no edge
// goes from B = P - A to A. A path that leaves A and comes back to A either leaves P, and then cannot
// come back into P because P is convex, or stays in P and so takes an edge from B to A, which does
// not exist; the same holds for B. The whole graph is convex, so by induction every part is.
//
// Order. The blocks of A are listed before those of B. Edges between A and B go from A to B, so by
// induction every edge goes from an earlier block to a later one or stays inside a block.
//
// Balance. An unconstrained minimum cut peels off one cheap op, which is no progress worth having,
// so some ops are pinned to each side by infinite arcs s -> v and v -> t. Order P by level (the
// longest path to v from a source of P, within P), ties by id: a predecessor has a lower level, so
// every prefix of that order is closed under predecessors within P and every suffix under
// successors. The first q ops are pinned to s and the last q to t, q = max(1, min(m - K, m / 4)):
//   - both sides keep at least q ops: when m <= 4K/3, q = m - K and both sides fit, so this is the
//     last cut of the part; otherwise both sides have between m/4 and 3m/4 ops, so the recursion is
//     O(log(m / K)) deep;
//   - pins by level rather than by id make the cut go across parallel branches ("horizontally")
//     instead of between them: imported graphs number a cell's branches one after another, and a
//     cut between whole branches would forbid running them side by side;
//   - a finite cut always exists: S = every op but the sink pins is closed under predecessors and
//     holds the source pins (2q <= m), so the maximum flow stays below the "infinite" capacity
//     1 + sum of w, and no fallback is needed.
// A single op that every path of P passes through (a post-dominator-like narrowing, e.g. a cell's
// output) gives a cut of one tensor, w(c), so the minimum cut finds such points by itself.
//
// Which minimum cut: the one with the smallest source side, the ops reachable from s in the residual
// network. It is the same for every maximum flow, so the result is deterministic and does not
// depend on the max-flow algorithm (Boost.Graph's Boykov–Kolmogorov).
//
// States. With max_block_states, a part also has to have at most that many states (predecessor-
// closed subsets, search/block_states.h). A part within the op bound but over the state bound is bisected with q = m / 4
// (balanced): the ops bound gives no better hint where to cut.
//
// Merging. Bisection can leave neighbours that would fit in one block (e.g. 25 + 7 ops with K = 32).
// Two blocks next to each other in the list form a convex set: a path out of one and into the other
// would visit a block listed strictly between them, and there is none. Merging them keeps the order
// valid and removes a cut. While some neighbours fit together (ops and states), the pair whose boundary is the most
// expensive (bytes of tensors written in the first and read in the second) is merged, ties to the
// earliest; so the cuts that remain are the cheap ones, and no two neighbouring blocks fit in one.
#include "search/partition_by_min_cut.h"

// GCC 12 reports a false "may be used uninitialized" inside Boost.Graph's edge iterator (a
// boost::optional it inlines into the max flow); the pragma applies to the lines of these headers.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <boost/graph/adjacency_list.hpp>
#include <boost/graph/boykov_kolmogorov_max_flow.hpp>
#pragma GCC diagnostic pop

#include <algorithm>
#include <cstdint>
#include <deque>
#include <string>
#include <set>
#include <utility>

#include "autograph/error.h"
#include "search/block_states.h"
#include "search/partition_options_check.h"

namespace autograph {

namespace {

// A flow network on vertices 0..n-1 with a minimum s-t cut.
class FlowNetwork {
 public:
  explicit FlowNetwork(int num_vertices) : network_(num_vertices) {}

  void AddArc(int from, int to, int64_t capacity) {
    const Edge forward = boost::add_edge(from, to, network_).first;
    const Edge backward = boost::add_edge(to, from, network_).first;
    network_[forward] = Arc{capacity, 0, backward};
    network_[backward] = Arc{0, 0, forward};
  }

  // The source side of the minimum cut with the fewest vertices: those reachable from s through arcs
  // with residual capacity left after a maximum flow.
  std::vector<char> MinCutSourceSide(int s, int t) {
    const size_t n = boost::num_vertices(network_);
    std::vector<Edge> predecessor(n);
    std::vector<boost::default_color_type> color(n);
    std::vector<int64_t> distance(n);
    const auto index = boost::get(boost::vertex_index, network_);
    boost::boykov_kolmogorov_max_flow(network_, boost::get(&Arc::capacity, network_),
                                      boost::get(&Arc::residual, network_), boost::get(&Arc::reverse, network_),
                                      boost::make_iterator_property_map(predecessor.begin(), index),
                                      boost::make_iterator_property_map(color.begin(), index),
                                      boost::make_iterator_property_map(distance.begin(), index), index, s, t);
    std::vector<char> reached(n, 0);
    std::deque<int> todo{s};
    reached[s] = 1;
    while (!todo.empty()) {
      const int v = todo.front();
      todo.pop_front();
      for (auto [it, end] = boost::out_edges(v, network_); it != end; ++it) {
        const int w = static_cast<int>(boost::target(*it, network_));
        if (!reached[w] && network_[*it].residual > 0) {
          reached[w] = 1;
          todo.push_back(w);
        }
      }
    }
    return reached;
  }

 private:
  using Traits = boost::adjacency_list_traits<boost::vecS, boost::vecS, boost::directedS>;
  using Edge = Traits::edge_descriptor;
  struct Arc {
    int64_t capacity = 0;
    int64_t residual = 0;
    Edge reverse;
  };
  using Network = boost::adjacency_list<boost::vecS, boost::vecS, boost::directedS, boost::no_property, Arc>;
  Network network_;
};

class MinCutPartitioner {
 public:
  MinCutPartitioner(const OpGraph& graph, const PartitionOptions& options)
      : graph_(graph), max_block_ops_(options.max_block_ops), max_block_states_(options.max_block_states),
        local_(graph.size(), -1) {}

  std::vector<std::vector<int>> Run() {
    std::vector<int> all(graph_.size());
    for (int v = 0; v < graph_.size(); ++v) all[v] = v;
    if (!all.empty()) Split(all);
    MergeNeighbours();
    return std::move(blocks_);
  }

 private:
  int64_t TensorBytes(int u) const { return std::max<int64_t>(1, graph_.node(u).bytes_written); }

  bool StatesFit(const std::vector<int>& ops) const {
    return max_block_states_ <= 0 || ops.size() <= 1 || BlockStatesAtMost(graph_, ops, max_block_states_);
  }

  bool Fits(const std::vector<int>& ops) const {
    return static_cast<int>(ops.size()) <= max_block_ops_ && StatesFit(ops);
  }

  // `part`: ascending ids of a convex set. Appends its blocks to blocks_, in a valid order.
  void Split(const std::vector<int>& part) {
    const int m = static_cast<int>(part.size());
    if (Fits(part)) {
      blocks_.push_back(part);
      return;
    }
    for (int i = 0; i < m; ++i) local_[part[i]] = i;

    // Levels within the part, and the ops in level order.
    std::vector<int> level(m, 0);
    for (int i = 0; i < m; ++i)
      for (int p : graph_.preds(part[i]))
        if (local_[p] >= 0) level[i] = std::max(level[i], level[local_[p]] + 1);
    std::vector<int> by_level(m);
    for (int i = 0; i < m; ++i) by_level[i] = i;
    std::stable_sort(by_level.begin(), by_level.end(), [&](int a, int b) { return level[a] < level[b]; });
    const int pinned = m <= max_block_ops_ ? std::max(1, m / 4) : std::max(1, std::min(m - max_block_ops_, m / 4));

    // Vertices: ops 0..m-1, then one tensor vertex per op with a successor in the part, then s, t.
    std::vector<int> tensor_vertex(m, -1);
    int num_vertices = m;
    int64_t finite_total = 0;
    for (int i = 0; i < m; ++i) {
      for (int v : graph_.succs(part[i])) {
        if (local_[v] < 0) continue;
        tensor_vertex[i] = num_vertices++;
        finite_total += TensorBytes(part[i]);
        break;
      }
    }
    const int s = num_vertices++, t = num_vertices++;
    const int64_t infinite = finite_total + 1;
    FlowNetwork network(num_vertices);
    for (int i = 0; i < m; ++i) {
      if (tensor_vertex[i] < 0) continue;
      network.AddArc(i, tensor_vertex[i], TensorBytes(part[i]));
      for (int v : graph_.succs(part[i])) {
        if (local_[v] < 0) continue;
        network.AddArc(tensor_vertex[i], local_[v], infinite);
        network.AddArc(local_[v], i, infinite);
      }
    }
    for (int k = 0; k < pinned; ++k) {
      network.AddArc(s, by_level[k], infinite);
      network.AddArc(by_level[m - 1 - k], t, infinite);
    }
    const std::vector<char> source_side = network.MinCutSourceSide(s, t);

    std::vector<int> first, second;
    for (int i = 0; i < m; ++i) (source_side[i] ? first : second).push_back(part[i]);
    for (int v : first)
      for (int p : graph_.preds(v))
        if (local_[p] >= 0 && !source_side[local_[p]])
          throw Error("PartitionByMinCut: internal error: the cut puts op " + std::to_string(v) +
                      " before its predecessor op " + std::to_string(p));
    for (int v : part) local_[v] = -1;
    if (first.empty() || second.empty())
      throw Error("PartitionByMinCut: internal error: a cut of " + std::to_string(m) + " operators left a side empty");
    Split(first);
    Split(second);
  }

  // Bytes of the tensors written in block `a` and read in block `b`.
  int64_t BoundaryBytes(const std::vector<int>& a, const std::vector<int>& b) const {
    int64_t bytes = 0;
    for (int u : a)
      for (int v : graph_.succs(u))
        if (std::binary_search(b.begin(), b.end(), v)) {
          bytes += TensorBytes(u);
          break;
        }
    return bytes;
  }

  void MergeNeighbours() {
    while (true) {
      int best = -1;
      int64_t best_bytes = -1;
      for (size_t i = 0; i + 1 < blocks_.size(); ++i) {
        if (static_cast<int>(blocks_[i].size() + blocks_[i + 1].size()) > max_block_ops_) continue;
        if (too_many_states_.count({blocks_[i].front(), blocks_[i + 1].front()})) continue;
        const int64_t bytes = BoundaryBytes(blocks_[i], blocks_[i + 1]);
        if (bytes > best_bytes) best = static_cast<int>(i), best_bytes = bytes;
      }
      if (best < 0) return;
      std::vector<int> merged = blocks_[best];
      merged.insert(merged.end(), blocks_[best + 1].begin(), blocks_[best + 1].end());
      std::sort(merged.begin(), merged.end());
      if (!StatesFit(merged)) {
        too_many_states_.insert({blocks_[best].front(), blocks_[best + 1].front()});
        continue;
      }
      blocks_[best] = std::move(merged);
      blocks_.erase(blocks_.begin() + best + 1);
    }
  }

  const OpGraph& graph_;
  const int max_block_ops_;
  const int64_t max_block_states_;
  // Neighbour pairs, by their blocks' first ops, whose union has too many states. A block keeps its
  // first op when it merges and only grows, and a larger set never has fewer states (its antichains
  // include the smaller one's), so a pair once too big stays too big.
  std::set<std::pair<int, int>> too_many_states_;
  std::vector<int> local_;  // op id -> index in the part being split, or -1
  std::vector<std::vector<int>> blocks_;
};

}  // namespace

std::vector<std::vector<int>> PartitionByMinCut(const OpGraph& graph, const PartitionOptions& options) {
  CheckPartitionOptions(options, "PartitionByMinCut");
  return MinCutPartitioner(graph, options).Run();
}

}  // namespace autograph
