// PlanStitchGroups: the ILP finds the same cost as a brute force over all set partitions on small
// random graphs; hand-made graphs group as expected (softmax is one kernel, convexity, domains,
// budget, horizontal fusion, groups that would need each other); the greedy planner stays feasible
// and never loses to running every node alone; malformed input throws InputError.
#include "stitch_plan/plan_stitch_groups.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <functional>
#include <iostream>
#include <random>
#include <string>
#include <vector>

#include "autograph/error.h"

namespace {

using autograph::PlanStitchGroups;
using autograph::StitchGraph;
using autograph::StitchPlan;
using autograph::StitchPlanCost;
using autograph::StitchPlanFeasible;
using autograph::StitchPlanOptions;

int AddNode(StitchGraph& graph, int domain = 0, int split = -1, int weight = 1) {
  graph.nodes.push_back({true, domain, split, weight});
  return static_cast<int>(graph.nodes.size()) - 1;
}

int AddFixedNode(StitchGraph& graph) {
  graph.nodes.push_back({false, -1, -1, 1});
  return static_cast<int>(graph.nodes.size()) - 1;
}

void AddTensor(StitchGraph& graph, int producer, std::vector<int> consumers, int64_t bytes, bool output = false) {
  graph.tensors.push_back({producer, std::move(consumers), bytes, output});
}

std::vector<int> Singletons(const StitchGraph& graph) {
  std::vector<int> group_of(graph.nodes.size(), -1);
  for (size_t v = 0; v < graph.nodes.size(); ++v)
    if (graph.nodes[v].stitchable) group_of[v] = static_cast<int>(v);
  return group_of;
}

// Random DAG: `stitchable` + `fixed` nodes in random order; each node makes one tensor read by each
// later node within `reach` ids with probability `density`; a few graph inputs.
StitchGraph RandomGraph(std::mt19937& rng, int stitchable, int fixed, int domains, double density, int reach) {
  StitchGraph graph;
  std::vector<bool> is_fixed(stitchable + fixed, false);
  for (int i = 0; i < fixed; ++i) is_fixed[i] = true;
  std::shuffle(is_fixed.begin(), is_fixed.end(), rng);
  std::uniform_real_distribution<double> coin(0, 1);
  for (bool f : is_fixed) {
    if (f) {
      AddFixedNode(graph);
    } else {
      int split = coin(rng) < 0.3 ? static_cast<int>(rng() % 2) : -1;
      AddNode(graph, static_cast<int>(rng() % domains), split, 1 + static_cast<int>(rng() % 3));
    }
  }
  const int n = static_cast<int>(graph.nodes.size());
  auto bytes = [&] { return int64_t{4096} * (1 + static_cast<int64_t>(rng() % 512)); };
  for (int input = 0; input < 2; ++input) {
    std::vector<int> readers;
    for (int v = 0; v < n; ++v)
      if (coin(rng) < 0.3) readers.push_back(v);
    AddTensor(graph, -1, readers, bytes());
  }
  for (int v = 0; v < n; ++v) {
    std::vector<int> readers;
    for (int w = v + 1; w < n && w <= v + reach; ++w)
      if (coin(rng) < density) readers.push_back(w);
    AddTensor(graph, v, readers, bytes(), readers.empty() || coin(rng) < 0.2);
  }
  return graph;
}

// The cheapest feasible plan by enumerating every set partition of the stitchable nodes (partial
// assignments that already mix domains or splits are cut short; StitchPlanFeasible judges the rest).
double BruteForceCost(const StitchGraph& graph, const StitchPlanOptions& options) {
  std::vector<int> stitchable;
  for (size_t v = 0; v < graph.nodes.size(); ++v)
    if (graph.nodes[v].stitchable) stitchable.push_back(static_cast<int>(v));
  std::vector<int> group_of(graph.nodes.size(), -1);
  std::vector<int> domain_of_group(stitchable.size()), split_of_group(stitchable.size());
  double best = INFINITY;
  std::function<void(size_t, int)> assign = [&](size_t i, int groups) {
    if (i == stitchable.size()) {
      if (StitchPlanFeasible(graph, group_of, options)) best = std::min(best, StitchPlanCost(graph, group_of, options));
      return;
    }
    const autograph::StitchNode& node = graph.nodes[stitchable[i]];
    for (int g = 0; g <= groups; ++g) {  // restricted growth: a new group only after the used ones
      const bool fresh = g == groups;
      if (!fresh && domain_of_group[g] != node.domain) continue;
      if (!fresh && node.split != -1 && split_of_group[g] != -1 && split_of_group[g] != node.split) continue;
      const int saved_split = split_of_group[g];
      if (fresh) domain_of_group[g] = node.domain, split_of_group[g] = -1;
      if (node.split != -1) split_of_group[g] = node.split;
      group_of[stitchable[i]] = g;
      assign(i + 1, std::max(groups, g + 1));
      split_of_group[g] = fresh ? -1 : saved_split;
    }
  };
  assign(0, 0);
  return best;
}

void ExpectValidPlan(const StitchGraph& graph, const StitchPlan& plan, const StitchPlanOptions& options) {
  std::string why;
  ASSERT_TRUE(StitchPlanFeasible(graph, plan.group_of, options, &why)) << why;
  EXPECT_DOUBLE_EQ(plan.cost_us, StitchPlanCost(graph, plan.group_of, options));
  int next = 0;  // groups are numbered 0.. in order of their first node
  for (int g : plan.group_of) {
    if (g < 0) continue;
    ASSERT_LE(g, next);
    if (g == next) ++next;
  }
  EXPECT_EQ(plan.num_groups, next);
}

TEST(PlanStitchGroups, IlpEqualsBruteForceOnSmallRandomGraphs) {
#ifndef AUTOGRAPH_WITH_GLPK
  GTEST_SKIP() << "built without GLPK: the planner is greedy only";
#endif
  std::mt19937 rng(2024);
  int grouped = 0;
  for (int seed = 0; seed < 200; ++seed) {
    const int stitchable = 4 + static_cast<int>(rng() % 5);
    const int fixed = static_cast<int>(rng() % 3);
    StitchGraph graph = RandomGraph(rng, stitchable, fixed, 1 + static_cast<int>(rng() % 2), 0.35, 8);
    if (rng() % 3 == 0) {
      std::vector<int> ids;
      for (size_t v = 0; v < graph.nodes.size(); ++v)
        if (graph.nodes[v].stitchable) ids.push_back(static_cast<int>(v));
      std::shuffle(ids.begin(), ids.end(), rng);
      graph.apart.push_back({ids[0], ids[1]});
    }
    StitchPlanOptions options;
    options.launch_us = 0.5 + (rng() % 8) * 0.5;
    options.max_weight = 2 + static_cast<int>(rng() % 7);
    const StitchPlan plan = PlanStitchGroups(graph, options);
    ExpectValidPlan(graph, plan, options);
    EXPECT_EQ(plan.subproblems_greedy, 0) << "case " << seed;
    const double best = BruteForceCost(graph, options);
    EXPECT_NEAR(plan.cost_us, best, 1e-9 * best) << "case " << seed;
    grouped += plan.num_groups < stitchable;
  }
  EXPECT_GT(grouped, 100);  // the cases are not all trivial
}

TEST(PlanStitchGroups, SoftmaxIsOneGroup) {
  // x / scale -> rowmax -> sub -> exp -> rowsum -> div, all over one domain (rows x 4096 floats).
  StitchGraph graph;
  const int64_t full = 64 * 4096 * 4, rows = 64 * 4;
  const int scale = AddNode(graph), max = AddNode(graph, 0, 1), sub = AddNode(graph), exp = AddNode(graph);
  const int sum = AddNode(graph, 0, 1), div = AddNode(graph);
  AddTensor(graph, -1, {scale}, full);
  AddTensor(graph, scale, {max, sub}, full);
  AddTensor(graph, max, {sub}, rows);
  AddTensor(graph, sub, {exp}, full);
  AddTensor(graph, exp, {sum, div}, full);
  AddTensor(graph, sum, {div}, rows);
  AddTensor(graph, div, {}, full, true);
  StitchPlanOptions options;
  const StitchPlan plan = PlanStitchGroups(graph, options);
  ExpectValidPlan(graph, plan, options);
  EXPECT_EQ(plan.num_groups, 1);
  EXPECT_NEAR(plan.cost_us, options.launch_us + 2.0 * full / options.bytes_per_us, 1e-9);
}

TEST(PlanStitchGroups, NonStitchableNodeOnAPathKeepsNodesApart) {
  StitchGraph graph;
  const int a = AddNode(graph), gemm = AddFixedNode(graph), b = AddNode(graph);
  AddTensor(graph, -1, {a}, 1 << 20);
  AddTensor(graph, a, {gemm, b}, 1 << 20);
  AddTensor(graph, gemm, {b}, 1 << 20);
  AddTensor(graph, b, {}, 1 << 20, true);
  StitchPlanOptions options;
  const StitchPlan plan = PlanStitchGroups(graph, options);
  ExpectValidPlan(graph, plan, options);
  EXPECT_EQ(plan.group_of[gemm], -1);
  EXPECT_NE(plan.group_of[a], plan.group_of[b]);
  std::string why;
  EXPECT_FALSE(StitchPlanFeasible(graph, {0, -1, 0}, options, &why));
  EXPECT_NE(why.find("not convex"), std::string::npos) << why;
}

TEST(PlanStitchGroups, DifferentDomainsNeverShare) {
  StitchGraph graph;
  const int a = AddNode(graph, 0), b = AddNode(graph, 1);
  AddTensor(graph, -1, {a}, 1 << 20);
  AddTensor(graph, a, {b}, 1 << 20);
  AddTensor(graph, b, {}, 1 << 20, true);
  StitchPlanOptions options;
  const StitchPlan plan = PlanStitchGroups(graph, options);
  ExpectValidPlan(graph, plan, options);
  EXPECT_EQ(plan.num_groups, 2);
  EXPECT_FALSE(StitchPlanFeasible(graph, {0, 0}, options));
}

TEST(PlanStitchGroups, BudgetSplitsALongChain) {
  StitchGraph graph;
  AddTensor(graph, -1, {0}, 1 << 20);
  for (int v = 0; v < 10; ++v) {
    AddNode(graph, 0, -1, 3);
    AddTensor(graph, v, v < 9 ? std::vector<int>{v + 1} : std::vector<int>{}, 1 << 20, v == 9);
  }
  StitchPlanOptions options;
  options.max_weight = 9;  // three nodes per group
  const StitchPlan plan = PlanStitchGroups(graph, options);
  ExpectValidPlan(graph, plan, options);
  EXPECT_EQ(plan.num_groups, 4);
  EXPECT_EQ(plan.subproblems_ilp + plan.subproblems_greedy, 1);
  EXPECT_FALSE(StitchPlanFeasible(graph, std::vector<int>(10, 0), options));
}

TEST(PlanStitchGroups, IndependentSiblingsFuseHorizontallyWhenLaunchesDominate) {
  StitchGraph graph;
  const int a = AddNode(graph), b = AddNode(graph);
  AddTensor(graph, -1, {a}, 4096);
  AddTensor(graph, -1, {b}, 4096);
  AddTensor(graph, a, {}, 4096, true);
  AddTensor(graph, b, {}, 4096, true);
  StitchPlanOptions options;
  options.launch_us = 8;
  const StitchPlan plan = PlanStitchGroups(graph, options);
  ExpectValidPlan(graph, plan, options);
  EXPECT_EQ(plan.num_groups, 1);
  EXPECT_NEAR(plan.cost_us, 8 + 4.0 * 4096 / options.bytes_per_us, 1e-9);

  graph.apart.push_back({a, b});  // unless they must stay apart
  EXPECT_EQ(PlanStitchGroups(graph, options).num_groups, 2);
}

TEST(PlanStitchGroups, GroupsThatWouldNeedEachOtherAreRejected) {
  // a1 -> b1 and b2 -> a2 with {a1, a2} and {b1, b2} grouped: each group is convex, but the kernel of
  // either group needs the other's output first.
  StitchGraph graph;
  const int a1 = AddNode(graph, 0), b2 = AddNode(graph, 1), b1 = AddNode(graph, 1), a2 = AddNode(graph, 0);
  AddTensor(graph, -1, {a1, b2}, 4096);
  AddTensor(graph, a1, {b1}, 4096);
  AddTensor(graph, b2, {a2}, 4096);
  AddTensor(graph, b1, {}, 4096, true);
  AddTensor(graph, a2, {}, 4096, true);
  StitchPlanOptions options;
  std::string why;
  EXPECT_FALSE(StitchPlanFeasible(graph, {0, 1, 1, 0}, options, &why));
  EXPECT_NE(why.find("depend on each other"), std::string::npos) << why;
  const StitchPlan plan = PlanStitchGroups(graph, options);
  ExpectValidPlan(graph, plan, options);
  EXPECT_EQ(plan.num_groups, 3);
}

TEST(PlanStitchGroups, GreedyIsFeasibleAndNeverWorseThanSingletons) {
  std::mt19937 rng(99);
  for (int seed = 0; seed < 5; ++seed) {
    StitchGraph graph = RandomGraph(rng, 240, 60, 3, 0.2, 12);
    for (int i = 0; i < 20; ++i) {
      const int a = static_cast<int>(rng() % 300), b = static_cast<int>(rng() % 300);
      if (a != b) graph.apart.push_back({a, b});
    }
    StitchPlanOptions options;
    options.ilp_max_nodes = 0;  // greedy only
    options.max_weight = 16;
    const StitchPlan plan = PlanStitchGroups(graph, options);
    ExpectValidPlan(graph, plan, options);
    EXPECT_EQ(plan.subproblems_ilp, 0);
    EXPECT_GT(plan.subproblems_greedy, 0);
    EXPECT_LT(plan.cost_us, StitchPlanCost(graph, Singletons(graph), options));
  }
}

// Blocks of random stitchable nodes joined by non-stitchable nodes (GEMMs): each block is its own
// subproblem, the way layers of a model are.
StitchGraph BlockChainGraph(std::mt19937& rng, const std::vector<int>& block_sizes) {
  StitchGraph graph;
  std::uniform_real_distribution<double> coin(0, 1);
  int previous = -1;  // the GEMM feeding this block
  for (int size : block_sizes) {
    const int first = static_cast<int>(graph.nodes.size());
    for (int i = 0; i < size; ++i) AddNode(graph, static_cast<int>(rng() % 2), coin(rng) < 0.2 ? 1 : -1, 1);
    const int gemm = AddFixedNode(graph);
    AddTensor(graph, previous, {first}, 1 << 20);
    std::vector<std::vector<int>> readers(size);
    std::vector<bool> fed(size, false);  // every node reads something made in the block
    for (int i = 0; i < size; ++i) {
      for (int j = i + 1; j < size && j <= i + 4; ++j)
        if (coin(rng) < 0.4) readers[i].push_back(first + j), fed[j] = true;
      if (i + 1 < size && !fed[i + 1]) readers[i].push_back(first + i + 1), fed[i + 1] = true;
      if (readers[i].empty()) readers[i].push_back(gemm);  // and reaches the GEMM
      AddTensor(graph, first + i, readers[i], int64_t{4096} * (1 + static_cast<int64_t>(rng() % 256)));
    }
    previous = gemm;
  }
  AddTensor(graph, previous, {}, 1 << 20, true);
  return graph;
}

TEST(PlanStitchGroups, MixedIlpAndGreedyOnBlocks) {
  std::mt19937 rng(5);
  StitchGraph graph = BlockChainGraph(rng, {6, 9, 16, 5, 20, 8, 3});
  StitchPlanOptions options;
  options.ilp_max_nodes = 10;  // the blocks of 16 and 20 go to the greedy planner
  const StitchPlan plan = PlanStitchGroups(graph, options);
  ExpectValidPlan(graph, plan, options);
  EXPECT_LT(plan.cost_us, StitchPlanCost(graph, Singletons(graph), options));
#ifdef AUTOGRAPH_WITH_GLPK
  EXPECT_EQ(plan.subproblems_greedy, 2);
  EXPECT_GE(plan.subproblems_ilp, 5);
  options.ilp_max_nodes = 0;  // greedy everywhere is never better than exact answers on the small blocks
  EXPECT_LE(plan.cost_us, PlanStitchGroups(graph, options).cost_us + 1e-9);
#else
  EXPECT_EQ(plan.subproblems_ilp, 0);  // every block goes to the greedy planner
#endif
}

TEST(PlanStitchGroups, IlpTimeoutFallsBackToTheBetterOfIncumbentAndGreedy) {
#ifndef AUTOGRAPH_WITH_GLPK
  GTEST_SKIP() << "built without GLPK: the planner is greedy only";
#endif
  std::mt19937 rng(3);
  StitchGraph graph = RandomGraph(rng, 24, 0, 1, 0.5, 8);
  StitchPlanOptions options;
  options.max_weight = 20;
  options.ilp_time_limit_s = 0.001;
  const StitchPlan plan = PlanStitchGroups(graph, options);
  ExpectValidPlan(graph, plan, options);
  EXPECT_GE(plan.subproblems_greedy, 1);
  options.ilp_max_nodes = 0;
  EXPECT_LE(plan.cost_us, PlanStitchGroups(graph, options).cost_us + 1e-9);
}

TEST(PlanStitchGroups, EmptyAndFixedOnlyGraphs) {
  const StitchPlan empty = PlanStitchGroups(StitchGraph{});
  EXPECT_EQ(empty.num_groups, 0);
  EXPECT_TRUE(empty.group_of.empty());
  EXPECT_EQ(empty.cost_us, 0);

  StitchGraph graph;
  const int gemm = AddFixedNode(graph), view = AddFixedNode(graph);
  AddTensor(graph, -1, {gemm}, 4096);
  AddTensor(graph, gemm, {view}, 4096);
  AddTensor(graph, view, {}, 4096, true);
  const StitchPlan plan = PlanStitchGroups(graph);
  EXPECT_EQ(plan.group_of, (std::vector<int>{-1, -1}));
  EXPECT_EQ(plan.num_groups, 0);
  EXPECT_EQ(plan.cost_us, 0);  // traffic of non-stitchable nodes is not counted
}

TEST(PlanStitchGroups, GreedyScalesToTwoThousandNodes) {
  std::mt19937 rng(11);
  StitchGraph graph = RandomGraph(rng, 1700, 300, 4, 0.15, 16);
  StitchPlanOptions options;
  options.ilp_max_nodes = 0;
  const auto start = std::chrono::steady_clock::now();
  const StitchPlan plan = PlanStitchGroups(graph, options);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::cout << "greedy on 2000 nodes: " << seconds << " s, " << plan.num_groups << " groups\n";
  ExpectValidPlan(graph, plan, options);
  EXPECT_LT(plan.cost_us, StitchPlanCost(graph, Singletons(graph), options));
}

TEST(PlanStitchGroups, MalformedInputThrows) {
  auto base = [] {
    StitchGraph graph;
    AddNode(graph);
    AddNode(graph);
    AddTensor(graph, 0, {1}, 16);
    return graph;
  };
  using autograph::InputError;
  EXPECT_NO_THROW(PlanStitchGroups(base()));
  {
    StitchGraph graph = base();
    graph.tensors[0].producer = 2;
    EXPECT_THROW(PlanStitchGroups(graph), InputError);
    graph.tensors[0].producer = -2;
    EXPECT_THROW(PlanStitchGroups(graph), InputError);
  }
  {
    StitchGraph graph = base();
    graph.tensors[0].consumers = {5};
    EXPECT_THROW(PlanStitchGroups(graph), InputError);
    graph.tensors[0].consumers = {0};  // not after its producer
    EXPECT_THROW(PlanStitchGroups(graph), InputError);
  }
  {
    StitchGraph graph = base();
    graph.tensors[0].producer = 1;
    graph.tensors[0].consumers = {0};  // against the topological order
    EXPECT_THROW(PlanStitchGroups(graph), InputError);
  }
  {
    StitchGraph graph = base();
    graph.nodes[1].domain = -1;
    EXPECT_THROW(PlanStitchGroups(graph), InputError);
    graph.nodes[1].stitchable = false;  // a non-stitchable node needs no domain
    EXPECT_NO_THROW(PlanStitchGroups(graph));
  }
  {
    StitchGraph graph = base();
    graph.nodes[0].weight = 0;
    EXPECT_THROW(PlanStitchGroups(graph), InputError);
  }
  {
    StitchGraph graph = base();
    graph.apart.push_back({0, 2});
    EXPECT_THROW(PlanStitchGroups(graph), InputError);
    graph.apart.back() = {-1, 0};
    EXPECT_THROW(PlanStitchGroups(graph), InputError);
  }
  EXPECT_THROW(StitchPlanCost(base(), {0}, {}), InputError);  // one entry per node
  EXPECT_THROW(StitchPlanFeasible(base(), {0, 0, 0}, {}), InputError);
}

}  // namespace
