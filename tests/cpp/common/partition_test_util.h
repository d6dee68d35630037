#pragma once
// Shared by the partition tests: random DAGs, and every property a partition for the block-by-block
// schedule search promises (convex, bounded, ascending, covering, ordered), states counted
// independently of the code under test.
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "core/op_graph.h"
#include "toy_op_graph.h"

namespace partition_test {

using autograph::OpGraph;
using autograph::OpKind;
using autograph::OpNode;
using Blocks = std::vector<std::vector<int>>;
using autograph::testing::AddOp;

// n ops writing 0..9999 bytes (0 included: the capacity is at least 1); each edge u -> v with
// v - u <= window present with probability `density`. A small window gives long, narrow graphs like
// real networks, a large one dense tangles.
inline OpGraph RandomDag(std::mt19937& rng, int n, double density, int window) {
  OpGraph g;
  for (int i = 0; i < n; ++i) AddOp(g, 0, rng() % 10000);
  for (int u = 0; u < n; ++u)
    for (int v = u + 1; v < n && v - u <= window; ++v)
      if ((rng() % 1000) / 1000.0 < density) g.AddEdge(u, v);
  return g;
}

// Ops reachable from `block` by paths that leave it (the block's outside successors and everything
// after them).
inline std::vector<char> ReachableOutsideBlock(const OpGraph& g, const std::vector<char>& in_block) {
  std::vector<char> reached(g.size(), 0);
  std::vector<int> todo;
  for (int v = 0; v < g.size(); ++v)
    if (in_block[v])
      for (int w : g.succs(v))
        if (!in_block[w] && !reached[w]) reached[w] = 1, todo.push_back(w);
  while (!todo.empty()) {
    const int v = todo.back();
    todo.pop_back();
    for (int w : g.succs(v))
      if (!reached[w]) reached[w] = 1, todo.push_back(w);
  }
  return reached;
}

// Every property PartitionByMinCut promises; "" when all hold, else the first one broken.
inline std::string PartitionViolation(const OpGraph& g, const Blocks& blocks, int max_block_ops) {
  std::vector<int> block_of(g.size(), -1);
  for (size_t b = 0; b < blocks.size(); ++b) {
    const auto& block = blocks[b];
    if (block.empty()) return "block " + std::to_string(b) + " is empty";
    if (static_cast<int>(block.size()) > max_block_ops)
      return "block " + std::to_string(b) + " has " + std::to_string(block.size()) + " ops";
    for (size_t i = 0; i < block.size(); ++i) {
      const int v = block[i];
      if (v < 0 || v >= g.size()) return "block " + std::to_string(b) + " lists op " + std::to_string(v);
      if (i > 0 && block[i - 1] >= v) return "block " + std::to_string(b) + " is not strictly ascending";
      if (block_of[v] >= 0) return "op " + std::to_string(v) + " is in two blocks";
      block_of[v] = static_cast<int>(b);
    }
  }
  for (int v = 0; v < g.size(); ++v)
    if (block_of[v] < 0) return "op " + std::to_string(v) + " is in no block";
  for (int u = 0; u < g.size(); ++u)
    for (int v : g.succs(u))
      if (block_of[u] > block_of[v])
        return "edge " + std::to_string(u) + " -> " + std::to_string(v) + " goes from block " +
               std::to_string(block_of[u]) + " back to block " + std::to_string(block_of[v]);
  for (size_t b = 0; b < blocks.size(); ++b) {
    std::vector<char> in_block(g.size(), 0);
    for (int v : blocks[b]) in_block[v] = 1;
    const std::vector<char> reached = ReachableOutsideBlock(g, in_block);
    for (int v : blocks[b])
      if (reached[v]) return "block " + std::to_string(b) + " is not convex: a path leaves it and comes back to op " +
                             std::to_string(v);
  }
  return "";
}

// Neighbouring blocks are merged while they fit, so no two neighbours fit together.
inline std::string MergeableNeighbours(const Blocks& blocks, int max_block_ops) {
  for (size_t b = 0; b + 1 < blocks.size(); ++b)
    if (static_cast<int>(blocks[b].size() + blocks[b + 1].size()) <= max_block_ops)
      return "blocks " + std::to_string(b) + " and " + std::to_string(b + 1) + " would fit in one";
  return "";
}

// States of a block (predecessor-closed subsets) = its antichains (each state is the set of ops
// below its sinks), counted here by choosing ops in id order, each one incomparable with those
// chosen; stops at `cap` + 1.
inline int64_t CountStates(const OpGraph& g, const std::vector<int>& block, int64_t cap) {
  const int m = static_cast<int>(block.size());
  std::vector<std::vector<char>> comparable(m, std::vector<char>(m, 0));
  for (int i = 0; i < m; ++i) {  // ops reachable from block[i] (through any ops of g)
    std::vector<char> seen(g.size(), 0);
    std::vector<int> todo{block[i]};
    while (!todo.empty()) {
      const int v = todo.back();
      todo.pop_back();
      for (int w : g.succs(v))
        if (!seen[w]) seen[w] = 1, todo.push_back(w);
    }
    for (int j = 0; j < m; ++j)
      if (seen[block[j]]) comparable[i][j] = comparable[j][i] = 1;
  }
  int64_t count = 0;
  std::vector<int> chosen;
  auto visit = [&](auto&& self, int from) -> void {
    if (count > cap) return;
    ++count;
    for (int i = from; i < m; ++i) {
      bool free = true;
      for (int c : chosen) free = free && !comparable[c][i];
      if (!free) continue;
      chosen.push_back(i);
      self(self, i + 1);
      chosen.pop_back();
    }
  };
  visit(visit, 0);
  return count;
}

}  // namespace partition_test
