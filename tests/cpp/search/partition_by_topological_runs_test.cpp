// PartitionByTopologicalRuns: runs of consecutive ids, convex and ordered, within the op and state
// bounds, each as long as the bounds allow.
#include "search/partition_by_topological_runs.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "autograph/error.h"
#include "partition_test_util.h"

namespace {

using autograph::OpGraph;
using autograph::PartitionByTopologicalRuns;
using autograph::PartitionOptions;
using partition_test::AddOp;
using partition_test::Blocks;
using partition_test::CountStates;
using partition_test::PartitionViolation;
using partition_test::RandomDag;

TEST(PartitionByTopologicalRuns, RunsAreValidBoundedAndMaximal) {
  for (uint32_t seed = 1; seed <= 6; ++seed) {
    std::mt19937 rng(seed);
    for (auto [density, window] : {std::pair{0.3, 6}, std::pair{0.1, 20}, std::pair{0.5, 1000}}) {
      const OpGraph g = RandomDag(rng, 100, density, window);
      for (auto [ops, states] : {std::pair{24, int64_t{0}}, std::pair{40, int64_t{50}}, std::pair{40, int64_t{500}}}) {
        PartitionOptions options;
        options.max_block_ops = ops;
        options.max_block_states = states;
        const Blocks blocks = PartitionByTopologicalRuns(g, options);
        const std::string context = "seed " + std::to_string(seed) + " window " + std::to_string(window) + " ops " +
                                    std::to_string(ops) + " states " + std::to_string(states);
        ASSERT_EQ(PartitionViolation(g, blocks, ops), "") << context;
        for (size_t b = 0; b < blocks.size(); ++b) {
          const auto& run = blocks[b];
          EXPECT_EQ(run.back() - run.front() + 1, static_cast<int>(run.size())) << context << " run " << b;
          if (states > 0 && run.size() > 1) EXPECT_LE(CountStates(g, run, states), states) << context << " run " << b;
          if (b + 1 == blocks.size()) continue;
          // Maximal: one more op breaks a bound.
          std::vector<int> longer = run;
          longer.push_back(run.back() + 1);
          EXPECT_TRUE(static_cast<int>(longer.size()) > ops || (states > 0 && CountStates(g, longer, states) > states))
              << context << " run " << b << " could have taken op " << run.back() + 1;
        }
      }
    }
  }
}

TEST(PartitionByTopologicalRuns, RejectsBadBounds) {
  OpGraph g;
  AddOp(g, 0, 1);
  PartitionOptions options;
  options.max_block_ops = 0;
  try {
    PartitionByTopologicalRuns(g, options);
    ADD_FAILURE() << "max_block_ops 0 was accepted";
  } catch (const autograph::Error& e) {
    EXPECT_NE(std::string(e.what()).find("PartitionByTopologicalRuns: max_block_ops is 0"), std::string::npos)
        << e.what();
  }
  EXPECT_TRUE(PartitionByTopologicalRuns(OpGraph{}, PartitionOptions{}).empty());
}

}  // namespace
