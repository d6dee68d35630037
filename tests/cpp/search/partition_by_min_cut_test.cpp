// PartitionByMinCut: on random DAGs and a zoo model the blocks are convex, bounded, ascending, cover
// every op once and come in an order every edge follows; on hand-made graphs the cuts land where the
// fewest bytes cross.
#include "search/partition_by_min_cut.h"

#include <gtest/gtest.h>
#include <torch/script.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <iostream>
#include <random>
#include <string>
#include <vector>

#include "autograph/error.h"
#include "autograph/model_loading.h"
#include "graph_pass/import_op_graph.h"
#include "graph_pass/lower_module.h"
#include "partition_test_util.h"
#include "zoo_test_util.h"

namespace {

using autograph::OpGraph;
using autograph::PartitionByMinCut;
using autograph::PartitionOptions;
using partition_test::AddOp;
using partition_test::Blocks;
using partition_test::CountStates;
using partition_test::MergeableNeighbours;
using partition_test::PartitionViolation;
using partition_test::RandomDag;

Blocks Partition(const OpGraph& g, int max_block_ops) {
  PartitionOptions options;
  options.max_block_ops = max_block_ops;
  return PartitionByMinCut(g, options);
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
    const int fork = AddOp(g, 0, 1000);
    if (input >= 0) g.AddEdge(input, fork);
    std::vector<int> branch_ends;
    for (int b = 0; b < 4; ++b) {
      int previous = fork;
      for (int k = 0; k < 3; ++k) {
        const int v = AddOp(g, 0, 1000);
        g.AddEdge(previous, v);
        previous = v;
      }
      branch_ends.push_back(previous);
    }
    const int join = AddOp(g, 0, join_bytes);
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
      const int first = AddOp(g, 0, 100), second = AddOp(g, 0, 100);
      if (previous_join >= 0) g.AddEdge(previous_join, first);
      g.AddEdge(first, second);
      ends.push_back(second);
    }
    previous_join = AddOp(g, 0, 100);
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
  const int head = AddOp(g, 0, 1000), wide = AddOp(g, 0, 100);
  g.AddEdge(head, wide);
  std::vector<int> branches;
  for (int b = 0; b < 3; ++b) {
    const int v = AddOp(g, 0, 60);
    g.AddEdge(wide, v);
    branches.push_back(v);
  }
  const int join = AddOp(g, 0, 1000), tail = AddOp(g, 0, 1000);
  for (int v : branches) g.AddEdge(v, join);
  g.AddEdge(join, tail);
  EXPECT_EQ(Partition(g, 5), (Blocks{Range(0, 1), Range(2, 6)}));
}

TEST(PartitionByMinCut, ChainIsCutIntoConsecutiveRanges) {
  OpGraph g;
  for (int i = 0; i < 100; ++i) {
    AddOp(g, 0, 64);
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

// With a state bound every block has at most that many states, and no two neighbours fit together
// in ops and states; the blocks stay convex and ordered. States are counted independently
// (antichains, partition_test_util.h).
TEST(PartitionByMinCut, StateBoundHoldsAndNeighboursStayApart) {
  for (uint32_t seed = 1; seed <= 6; ++seed) {
    std::mt19937 rng(seed);
    for (auto [density, window] : {std::pair{0.3, 6}, std::pair{0.15, 12}, std::pair{0.05, 20}}) {
      const OpGraph g = RandomDag(rng, 120, density, window);
      for (int64_t bound : {3, 40, 400}) {
        PartitionOptions options;
        options.max_block_ops = 40;
        options.max_block_states = bound;
        const Blocks blocks = PartitionByMinCut(g, options);
        const std::string context =
            "seed " + std::to_string(seed) + " window " + std::to_string(window) + " bound " + std::to_string(bound);
        ASSERT_EQ(PartitionViolation(g, blocks, 40), "") << context;
        for (size_t b = 0; b < blocks.size(); ++b)
          if (blocks[b].size() > 1) EXPECT_LE(CountStates(g, blocks[b], bound), bound) << context << " block " << b;
        for (size_t b = 0; b + 1 < blocks.size(); ++b) {
          std::vector<int> both = blocks[b];
          both.insert(both.end(), blocks[b + 1].begin(), blocks[b + 1].end());
          std::sort(both.begin(), both.end());
          EXPECT_TRUE(both.size() > 40 || CountStates(g, both, bound) > bound) << context << " blocks " << b;
        }
      }
    }
  }
}

// 12 independent ops have 2^12 states: within 40 ops but over a bound of 100, so they are cut, into
// blocks of at most 6 ops (2^6 = 64 states; 7 ops would have 128).
TEST(PartitionByMinCut, WideBlockWithinOpBoundIsCutByStates) {
  OpGraph g;
  for (int i = 0; i < 12; ++i) AddOp(g, 0, 10);
  PartitionOptions options;
  options.max_block_ops = 40;
  options.max_block_states = 100;
  const Blocks blocks = PartitionByMinCut(g, options);
  ASSERT_EQ(PartitionViolation(g, blocks, 40), "");
  for (const auto& block : blocks) EXPECT_LE(block.size(), 6u);
  options.max_block_states = 0;  // no state bound: one block
  EXPECT_EQ(PartitionByMinCut(g, options).size(), 1u);
}

TEST(PartitionByMinCut, RejectsBadStateBounds) {
  OpGraph g;
  AddOp(g, 0, 1);
  PartitionOptions options;
  options.max_block_states = -1;
  try {
    PartitionByMinCut(g, options);
    ADD_FAILURE() << "max_block_states -1 was accepted";
  } catch (const autograph::Error& e) {
    EXPECT_NE(std::string(e.what()).find("max_block_states"), std::string::npos) << e.what();
  }
  options.max_block_states = 10;
  options.max_block_ops = 65;
  EXPECT_THROW(PartitionByMinCut(g, options), autograph::Error);
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
