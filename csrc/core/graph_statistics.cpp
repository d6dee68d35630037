#include "core/graph_statistics.h"

#include <algorithm>

#include "core/bipartite_matching.h"

namespace autograph {

namespace {

// Reachability rows as 64-bit words, filled in reverse topological order.
std::vector<std::vector<uint64_t>> TransitiveClosure(const std::vector<std::vector<int>>& succs) {
  const size_t n = succs.size(), words = (n + 63) / 64;
  std::vector<std::vector<uint64_t>> reach(n, std::vector<uint64_t>(words, 0));
  for (size_t u = n; u-- > 0;) {
    for (int v : succs[u]) {
      reach[u][v / 64] |= uint64_t{1} << (v % 64);
      for (size_t w = 0; w < words; ++w) reach[u][w] |= reach[v][w];
    }
  }
  return reach;
}

}  // namespace

int DagWidth(const std::vector<std::vector<int>>& succs) {
  const int n = static_cast<int>(succs.size());
  auto reach = TransitiveClosure(succs);
  std::vector<std::vector<int>> adjacency(n);
  for (int u = 0; u < n; ++u) {
    for (size_t w = 0; w < reach[u].size(); ++w) {
      for (uint64_t bits = reach[u][w]; bits; bits &= bits - 1)
        adjacency[u].push_back(static_cast<int>(w * 64 + __builtin_ctzll(bits)));
    }
  }
  auto match = MaximumBipartiteMatching(adjacency, n);
  int matched = static_cast<int>(std::count_if(match.begin(), match.end(), [](int m) { return m >= 0; }));
  return n - matched;
}

GraphStatistics ComputeStatistics(const OpGraph& graph) {
  GraphStatistics s;
  const int n = graph.size();
  s.operators = n;
  s.edges = graph.num_edges();
  std::vector<std::vector<int>> succs(n);
  std::vector<int> path_ops(n, 0);
  std::vector<double> path_flops(n, 0);
  for (int u = 0; u < n; ++u) {
    const OpNode& node = graph.node(u);
    succs[u] = graph.succs(u);
    s.flops += node.flops;
    s.weight_bytes += node.weight_bytes;
    s.ops_by_kind[ToString(node.kind)]++;
    s.ops_by_type[node.op]++;
    int best_ops = 0;
    double best_flops = 0;
    for (int p : graph.preds(u)) {
      best_ops = std::max(best_ops, path_ops[p]);
      best_flops = std::max(best_flops, path_flops[p]);
    }
    path_ops[u] = best_ops + (node.kind == OpKind::View ? 0 : 1);
    path_flops[u] = best_flops + node.flops;
    s.critical_path_ops = std::max(s.critical_path_ops, path_ops[u]);
    s.critical_path_flops = std::max(s.critical_path_flops, path_flops[u]);
  }
  s.width = DagWidth(succs);
  return s;
}

}  // namespace autograph
