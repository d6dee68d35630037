#include "core/graph_statistics.h"

#include <gtest/gtest.h>

#include <random>

namespace {

using autograph::DagWidth;

// Largest antichain by enumerating every subset (n <= 14).
int BruteForceWidth(const std::vector<std::vector<int>>& succs) {
  const int n = static_cast<int>(succs.size());
  std::vector<uint32_t> reach(n, 0);
  for (int u = n - 1; u >= 0; --u)
    for (int v : succs[u]) reach[u] |= (1u << v) | reach[v];
  int best = 0;
  for (uint32_t set = 1; set < (1u << n); ++set) {
    bool antichain = true;
    for (int u = 0; u < n && antichain; ++u)
      if ((set >> u & 1) && (reach[u] & set)) antichain = false;
    if (antichain) best = std::max(best, __builtin_popcount(set));
  }
  return best;
}

TEST(DagWidth, EqualsBruteForceOnRandomDags) {
  std::mt19937 rng(11);
  for (int trial = 0; trial < 200; ++trial) {
    int n = 1 + rng() % 14;
    double density = (rng() % 60) / 100.0;
    std::vector<std::vector<int>> succs(n);
    for (int u = 0; u < n; ++u)
      for (int v = u + 1; v < n; ++v)
        if ((rng() % 1000) / 1000.0 < density) succs[u].push_back(v);
    EXPECT_EQ(DagWidth(succs), BruteForceWidth(succs)) << "trial " << trial << " n=" << n;
  }
}

TEST(DagWidth, KnownShapes) {
  EXPECT_EQ(DagWidth({{1}, {2}, {}}), 1);                  // chain
  EXPECT_EQ(DagWidth({{}, {}, {}, {}}), 4);                // no edges
  EXPECT_EQ(DagWidth({{1, 2, 3}, {4}, {4}, {4}, {}}), 3);  // fork-join of three branches
}

autograph::OpNode Op(autograph::OpKind kind, double flops) {
  autograph::OpNode n;
  n.op = kind == autograph::OpKind::View ? "aten::view" : "aten::conv2d";
  n.kind = kind;
  n.flops = flops;
  return n;
}

TEST(ComputeStatistics, CriticalPathsAndCounts) {
  using autograph::OpKind;
  // 0 -> {1 (heavy), 2 -> 3} -> 4; node 2 is a view and does not count as an operator on the path.
  autograph::OpGraph g;
  g.AddNode(Op(OpKind::ComputeBound, 10));
  g.AddNode(Op(OpKind::ComputeBound, 100));
  g.AddNode(Op(OpKind::View, 0));
  g.AddNode(Op(OpKind::MemoryBound, 1));
  g.AddNode(Op(OpKind::MemoryBound, 1));
  g.AddEdge(0, 1);
  g.AddEdge(0, 2);
  g.AddEdge(2, 3);
  g.AddEdge(1, 4);
  g.AddEdge(3, 4);
  g.AddEdge(3, 4);  // duplicate ignored
  auto s = autograph::ComputeStatistics(g);
  EXPECT_EQ(s.operators, 5);
  EXPECT_EQ(s.edges, 5);
  EXPECT_EQ(s.width, 2);
  EXPECT_EQ(s.critical_path_ops, 3);             // 0,1,4 and 0,(2),3,4 both count 3
  EXPECT_DOUBLE_EQ(s.critical_path_flops, 111);  // 0 -> 1 -> 4
  EXPECT_DOUBLE_EQ(s.flops, 112);
  EXPECT_EQ(s.ops_by_kind.at("compute"), 2);
  EXPECT_EQ(s.ops_by_kind.at("memory"), 2);
  EXPECT_EQ(s.ops_by_kind.at("view"), 1);
}

TEST(OpGraph, RejectsBackwardEdges) {
  autograph::OpGraph g;
  g.AddNode(Op(autograph::OpKind::MemoryBound, 1));
  g.AddNode(Op(autograph::OpKind::MemoryBound, 1));
  EXPECT_THROW(g.AddEdge(1, 0), c10::Error);
}

}  // namespace
