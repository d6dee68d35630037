// PartitionByMinCut: on random DAGs and a zoo model the blocks are convex, bounded, ascending, cover
// every op once and come in an order every edge follows; on hand-made graphs the cuts land where the
// fewest bytes cross.
#include "autograph/partition_by_min_cut.h"

#include <gtest/gtest.h>
#include <torch/script.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <iostream>
#include <random>
#include <string>
#include <vector>

#include "autograph/error.h"
#include "autograph/import_op_graph.h"
#include "autograph/lower_module.h"
#include "autograph/model_loading.h"
#include "zoo_test_util.h"

namespace {

using autograph::OpGraph;
using autograph::OpKind;
using autograph::OpNode;
using autograph::PartitionByMinCut;
using autograph::PartitionOptions;
using Blocks = std::vector<std::vector<int>>;

int AddOp(OpGraph& g, int64_t bytes_written) {
  OpNode node;
  node.op = "test::op" + std::to_string(g.size());
  node.kind = OpKind::ComputeBound;
  node.bytes_written = bytes_written;
  return g.AddNode(node);
}

Blocks Partition(const OpGraph& g, int max_block_ops) {
  PartitionOptions options;
  options.max_block_ops = max_block_ops;
  return PartitionByMinCut(g, options);
}

// n ops writing 0..9999 bytes (0 included: the capacity is at least 1); each edge u -> v with
// v - u <= window present with probability `density`. A small window gives long, narrow graphs like
// real networks, a large one dense tangles.
OpGraph RandomDag(std::mt19937& rng, int n, double density, int window) {
  OpGraph g;
  for (int i = 0; i < n; ++i) AddOp(g, rng() % 10000);
  for (int u = 0; u < n; ++u)
    for (int v = u + 1; v < n && v - u <= window; ++v)
      if ((rng() % 1000) / 1000.0 < density) g.AddEdge(u, v);
  return g;
}

// Ops reachable from `block` by paths that leave it (the block's outside successors and everything
// after them).
std::vector<char> ReachableOutsideBlock(const OpGraph& g, const std::vector<char>& in_block) {
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
std::string PartitionViolation(const OpGraph& g, const Blocks& blocks, int max_block_ops) {
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
std::string MergeableNeighbours(const Blocks& blocks, int max_block_ops) {
  for (size_t b = 0; b + 1 < blocks.size(); ++b)
    if (static_cast<int>(blocks[b].size() + blocks[b + 1].size()) <= max_block_ops)
      return "blocks " + std::to_string(b) + " and " + std::to_string(b + 1) + " would fit in one";
  return "";
}

std::vector<int> Range(int first, int last) {
  std::vector<int> ids;
  for (int v = first; v <= last; ++v) ids.push_back(v);
  return ids;
}

TEST(PartitionByMinCut, RandomDagsGiveConvexBoundedOrderedBlocks) {
  for (uint32_t seed = 1; seed <= 8; ++seed) {
    std::mt19937 rng(seed);
    for (int n : {1, 2, 7, 33, 90, 200}) {
      for (auto [density, window] : {std::pair{0.3, 6}, std::pair{0.1, 40}, std::pair{0.5, 1000}}) {
        if (window == 1000 && n > 90) continue;  // dense tangles: slow to check, nothing new to learn
        const OpGraph g = RandomDag(rng, n, density, window);
        for (int k : {1, 2, 3, 8, 32}) {
          const Blocks blocks = Partition(g, k);
          const std::string context = "seed " + std::to_string(seed) + " n " + std::to_string(n) + " density " +
                                      std::to_string(density) + " window " + std::to_string(window) + " max " +
                                      std::to_string(k);
          ASSERT_EQ(PartitionViolation(g, blocks, k), "") << context;
          ASSERT_EQ(MergeableNeighbours(blocks, k), "") << context;
          if (k == 8) {
            ASSERT_EQ(Partition(g, k), blocks) << context << ": not deterministic";
          }
        }
      }
    }
  }
}

// Two diamonds of four branches (3 ops each) between a fork and a join; the first join writes a tiny
// tensor that is the only thing the second diamond reads. Either diamond fits in 16 ops, both don't.
TEST(PartitionByMinCut, CutsTwoWideDiamondsAtTheNarrowEdge) {
  OpGraph g;
  auto diamond = [&](int input, int64_t join_bytes) {
    const int fork = AddOp(g, 1000);
    if (input >= 0) g.AddEdge(input, fork);
    std::vector<int> branch_ends;
    for (int b = 0; b < 4; ++b) {
      int previous = fork;
      for (int k = 0; k < 3; ++k) {
        const int v = AddOp(g, 1000);
        g.AddEdge(previous, v);
        previous = v;
      }
      branch_ends.push_back(previous);
    }
    const int join = AddOp(g, join_bytes);
    for (int end : branch_ends) g.AddEdge(end, join);
    return join;
  };
  const int first_join = diamond(-1, 10);
  diamond(first_join, 1000);
  ASSERT_EQ(g.size(), 28);
  EXPECT_EQ(Partition(g, 16), (Blocks{Range(0, 13), Range(14, 27)}));
  EXPECT_EQ(Partition(g, 27), (Blocks{Range(0, 13), Range(14, 27)}));
}

// Four cells: three branches of two ops each, joined by one op that feeds the next cell's branches.
// Every op writes the same bytes, so a cut after a join (one tensor) is three times cheaper than one
// across the branches: the blocks are whole cells, or pairs of cells when two fit.
TEST(PartitionByMinCut, CutsWhereEveryPathPassesOneOp) {
  OpGraph g;
  int previous_join = -1;
  for (int cell = 0; cell < 4; ++cell) {
    std::vector<int> ends;
    for (int b = 0; b < 3; ++b) {
      const int first = AddOp(g, 100), second = AddOp(g, 100);
      if (previous_join >= 0) g.AddEdge(previous_join, first);
      g.AddEdge(first, second);
      ends.push_back(second);
    }
    previous_join = AddOp(g, 100);
    for (int end : ends) g.AddEdge(end, previous_join);
  }
  const Blocks cells{Range(0, 6), Range(7, 13), Range(14, 20), Range(21, 27)};
  EXPECT_EQ(Partition(g, 7), cells);
  EXPECT_EQ(Partition(g, 10), cells);
  EXPECT_EQ(Partition(g, 14), (Blocks{Range(0, 13), Range(14, 27)}));
}

// An op read by three branches is one tensor: cutting right after it costs its bytes once (100),
// less than cutting the three branch outputs (3 x 60), though it has three edges across the cut.
TEST(PartitionByMinCut, CountsATensorOnceWhateverItsReaders) {
  OpGraph g;
  const int head = AddOp(g, 1000), wide = AddOp(g, 100);
  g.AddEdge(head, wide);
  std::vector<int> branches;
  for (int b = 0; b < 3; ++b) {
    const int v = AddOp(g, 60);
    g.AddEdge(wide, v);
    branches.push_back(v);
  }
  const int join = AddOp(g, 1000), tail = AddOp(g, 1000);
  for (int v : branches) g.AddEdge(v, join);
  g.AddEdge(join, tail);
  EXPECT_EQ(Partition(g, 5), (Blocks{Range(0, 1), Range(2, 6)}));
}

TEST(PartitionByMinCut, ChainIsCutIntoConsecutiveRanges) {
  OpGraph g;
  for (int i = 0; i < 100; ++i) {
    AddOp(g, 64);
    if (i > 0) g.AddEdge(i - 1, i);
  }
  for (int k : {1, 7, 32, 99}) {
    const Blocks blocks = Partition(g, k);
    ASSERT_EQ(PartitionViolation(g, blocks, k), "") << "max " << k;
    int next = 0;
    for (const auto& block : blocks) {
      EXPECT_EQ(block, Range(next, next + static_cast<int>(block.size()) - 1)) << "max " << k;
      next += static_cast<int>(block.size());
    }
    EXPECT_LE(blocks.size(), 2 * ((100 + k - 1) / k)) << "max " << k;  // neighbours never fit together
  }
  EXPECT_EQ(Partition(g, 1).size(), 100u);
}

TEST(PartitionByMinCut, GraphThatFitsStaysOneBlock) {
  std::mt19937 rng(7);
  const OpGraph g = RandomDag(rng, 20, 0.3, 5);
  EXPECT_EQ(Partition(g, 20), (Blocks{Range(0, 19)}));
  EXPECT_EQ(PartitionByMinCut(g), (Blocks{Range(0, 19)}));  // default: 32
  EXPECT_EQ(Partition(OpGraph(), 4), Blocks{});
}

TEST(PartitionByMinCut, RejectsMaxBlockOpsBelowOne) {
  std::mt19937 rng(3);
  const OpGraph g = RandomDag(rng, 10, 0.3, 5);
  for (int k : {0, -1}) {
    try {
      Partition(g, k);
      ADD_FAILURE() << "max_block_ops " << k << " was accepted";
    } catch (const autograph::Error& e) {
      EXPECT_NE(std::string(e.what()).find("max_block_ops"), std::string::npos) << e.what();
    }
  }
}

// SqueezeNet imported at a small input size (the structure does not depend on it). Inception-v3 would
// be the richer case, but lowering it alone takes seconds.
TEST(PartitionByMinCut, SqueezeNetBlocksAreValid) {
  const std::string path = autograph::testing::ZooModel("squeezenet");
  if (!std::filesystem::exists(path)) GTEST_SKIP() << path << " is missing: run models/export.py";
  torch::NoGradGuard no_grad;
  auto specs = autograph::ReadInputSpecs(*autograph::InputSpecPathFor(path));
  specs[0].shape = {1, 3, 128, 128};
  const OpGraph g =
      autograph::ImportOpGraph(autograph::LowerModule(autograph::LoadModule(path)), autograph::MakeExampleInputs(specs));
  for (int k : {8, 32}) {
    const auto start = std::chrono::steady_clock::now();
    const Blocks blocks = Partition(g, k);
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    EXPECT_EQ(PartitionViolation(g, blocks, k), "") << "max " << k;
    EXPECT_EQ(MergeableNeighbours(blocks, k), "") << "max " << k;
    std::cout << "squeezenet: " << g.size() << " ops into " << blocks.size() << " blocks of at most " << k << " in "
              << ms << " ms\n";
  }
}

}  // namespace
