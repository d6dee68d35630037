#include "core/bipartite_matching.h"

#include <gtest/gtest.h>

#include <random>

namespace {

// Exhaustive maximum matching size by trying every assignment of left vertices.
int BruteForceMatching(const std::vector<std::vector<int>>& adj, size_t u, std::vector<bool>& used) {
  if (u == adj.size()) return 0;
  int best = BruteForceMatching(adj, u + 1, used);
  for (int v : adj[u]) {
    if (used[v]) continue;
    used[v] = true;
    best = std::max(best, 1 + BruteForceMatching(adj, u + 1, used));
    used[v] = false;
  }
  return best;
}

TEST(BipartiteMatching, EqualsBruteForceOnRandomGraphs) {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 300; ++trial) {
    int left = 1 + rng() % 7, right = 1 + rng() % 7;
    double density = (rng() % 100) / 100.0;
    std::vector<std::vector<int>> adj(left);
    for (int u = 0; u < left; ++u)
      for (int v = 0; v < right; ++v)
        if ((rng() % 1000) / 1000.0 < density) adj[u].push_back(v);
    auto match = autograph::MaximumBipartiteMatching(adj, right);
    // The matching is valid: edges exist and right vertices are used once.
    std::vector<int> owner(right, -1);
    int size = 0;
    for (int u = 0; u < left; ++u) {
      if (match[u] < 0) continue;
      ASSERT_NE(std::find(adj[u].begin(), adj[u].end(), match[u]), adj[u].end());
      ASSERT_EQ(owner[match[u]], -1);
      owner[match[u]] = u;
      ++size;
    }
    std::vector<bool> used(right, false);
    EXPECT_EQ(size, BruteForceMatching(adj, 0, used)) << "trial " << trial;
  }
}

TEST(BipartiteMatching, NeedsAugmentingPath) {
  // Greedy would match 0-0 and leave 1 unmatched; the maximum matches both.
  auto match = autograph::MaximumBipartiteMatching({{0, 1}, {0}}, 2);
  EXPECT_EQ(match[0], 1);
  EXPECT_EQ(match[1], 0);
}

}  // namespace
