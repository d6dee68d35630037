// NimbleSchedule and its chain decomposition: the transitive reduction on hand graphs and against
// reachability, the minimum path cover against brute force, and schedules that validate on random
// DAGs and a zoo model while fork-joins, chains, views and stream reuse come out as Nimble intends.
#include "search/nimble_schedule.h"

#include <gtest/gtest.h>
#include <torch/script.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <iostream>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "autograph/model_loading.h"
#include "core/bipartite_matching.h"
#include "core/graph_statistics.h"
#include "executor/validate_schedule.h"
#include "graph_pass/import_op_graph.h"
#include "graph_pass/lower_module.h"
#include "search/nimble_chains.h"
#include "toy_op_graph.h"
#include "zoo_test_util.h"

namespace {

using autograph::NimbleSchedule;
using autograph::NimbleStats;
using autograph::OpGraph;
using autograph::OpKind;
using autograph::OpNode;
using autograph::Schedule;
using Adjacency = std::vector<std::vector<int>>;
using autograph::testing::AddOp;

OpGraph MakeGraph(int n, const std::vector<std::pair<int, int>>& edges) {
  OpGraph g;
  for (int i = 0; i < n; ++i) AddOp(g, 0, 0);
  for (auto [u, v] : edges) g.AddEdge(u, v);
  return g;
}

// Forward edges with probability `density`; each op a View with probability `views`.
OpGraph RandomDag(std::mt19937& rng, int n, double density, double views = 0) {
  OpGraph g;
  for (int i = 0; i < n; ++i) AddOp(g, 0, 0, (rng() % 1000) / 1000.0 < views ? OpKind::View : OpKind::ComputeBound);
  for (int u = 0; u < n; ++u)
    for (int v = u + 1; v < n; ++v)
      if ((rng() % 1000) / 1000.0 < density) g.AddEdge(u, v);
  return g;
}

Adjacency RandomAdjacency(std::mt19937& rng, int n, double density) {
  Adjacency succs(n);
  for (int u = 0; u < n; ++u)
    for (int v = u + 1; v < n; ++v)
      if ((rng() % 1000) / 1000.0 < density) succs[u].push_back(v);
  return succs;
}

Adjacency SuccsOf(const OpGraph& g) {
  Adjacency succs(g.size());
  for (int v = 0; v < g.size(); ++v) succs[v] = g.succs(v);
  return succs;
}

std::string ValidationError(const Schedule& s, const OpGraph& g) {
  try {
    autograph::ValidateSchedule(s, g);
  } catch (const autograph::ScheduleError& e) {
    return e.what();
  }
  return "";
}

// (stage, group) of every op.
std::vector<std::pair<int, int>> Placement(const Schedule& s, int n) {
  std::vector<std::pair<int, int>> at(n, {-1, -1});
  for (size_t st = 0; st < s.stages.size(); ++st)
    for (size_t gr = 0; gr < s.stages[st].groups.size(); ++gr)
      for (int op : s.stages[st].groups[gr]) at[op] = {static_cast<int>(st), static_cast<int>(gr)};
  return at;
}

// --- Transitive reduction ----------------------------------------------------------------------

TEST(NimbleScheduleTransitiveReduction, DropsEdgesImpliedByLongerPaths) {
  EXPECT_EQ(autograph::TransitiveReduction({{1, 2}, {2}, {}}), (Adjacency{{1}, {2}, {}}));
  // Diamond with a shortcut from top to bottom.
  EXPECT_EQ(autograph::TransitiveReduction({{1, 2, 3}, {3}, {3}, {}}), (Adjacency{{1, 2}, {3}, {3}, {}}));
  // Long chain with shortcuts of every length.
  EXPECT_EQ(autograph::TransitiveReduction({{1, 2, 4}, {2, 3, 4}, {3}, {4}, {}}), (Adjacency{{1}, {2}, {3}, {4}, {}}));
  // Nothing implied: kept as is.
  const Adjacency reduced{{1, 2}, {3}, {3, 4}, {}, {}};
  EXPECT_EQ(autograph::TransitiveReduction(reduced), reduced);
  EXPECT_EQ(autograph::TransitiveReduction({}), Adjacency{});
}

// The reduction keeps reachability and drops exactly the edges that another path implies.
TEST(NimbleScheduleTransitiveReduction, KeepsReachabilityAndOnlyDirectEdges) {
  for (uint32_t seed = 1; seed <= 30; ++seed) {
    std::mt19937 rng(seed);
    const int n = 2 + static_cast<int>(rng() % 60);
    const Adjacency succs = RandomAdjacency(rng, n, (rng() % 50) / 100.0);
    const Adjacency reduced = autograph::TransitiveReduction(succs);
    const autograph::DagReachability before(succs), after(reduced);
    for (int u = 0; u < n; ++u) {
      for (int v = 0; v < n; ++v) ASSERT_EQ(before.Reaches(u, v), after.Reaches(u, v)) << "seed " << seed;
      for (int v : succs[u]) {
        // Implied: some other successor w of u reaches v.
        bool implied = false;
        for (int w : succs[u]) implied = implied || (w != v && before.Reaches(w, v));
        const bool kept = std::count(reduced[u].begin(), reduced[u].end(), v) > 0;
        EXPECT_EQ(kept, !implied) << "seed " << seed << " edge " << u << " -> " << v;
      }
    }
  }
}

// --- Minimum path cover ------------------------------------------------------------------------

// Fewest vertex-disjoint paths along edges covering all nodes, by trying every choice of "next node"
// (none or one successor) for every node such that no node is chosen twice.
int BruteForcePathCover(const Adjacency& succs) {
  const int n = static_cast<int>(succs.size());
  std::vector<char> taken(n, 0);
  int best_links = 0;
  std::function<void(int, int)> choose = [&](int u, int links) {
    if (u == n) {
      best_links = std::max(best_links, links);
      return;
    }
    choose(u + 1, links);
    for (int v : succs[u]) {
      if (taken[v]) continue;
      taken[v] = 1;
      choose(u + 1, links + 1);
      taken[v] = 0;
    }
  };
  choose(0, 0);
  return n - best_links;
}

// The paths follow edges, are disjoint and cover every node.
void ExpectPathCover(const Adjacency& succs, const Adjacency& paths, const std::string& context) {
  std::vector<int> seen(succs.size(), 0);
  for (const auto& path : paths) {
    ASSERT_FALSE(path.empty()) << context;
    for (size_t i = 0; i < path.size(); ++i) {
      ++seen.at(path[i]);
      if (i > 0) {
        EXPECT_TRUE(std::count(succs[path[i - 1]].begin(), succs[path[i - 1]].end(), path[i]))
            << context << ": " << path[i - 1] << " -> " << path[i] << " is not an edge";
      }
    }
  }
  for (size_t v = 0; v < succs.size(); ++v) EXPECT_EQ(seen[v], 1) << context << " node " << v;
}

TEST(NimbleSchedulePathCover, IsMinimumOnTinyGraphs) {
  for (uint32_t seed = 1; seed <= 300; ++seed) {
    std::mt19937 rng(seed);
    const int n = 1 + static_cast<int>(rng() % 8);
    const Adjacency reduced = autograph::TransitiveReduction(RandomAdjacency(rng, n, (rng() % 80) / 100.0));
    const Adjacency paths = autograph::MinimumPathCover(reduced);
    const std::string context = "seed " + std::to_string(seed);
    ExpectPathCover(reduced, paths, context);
    EXPECT_EQ(static_cast<int>(paths.size()), BruteForcePathCover(reduced)) << context;
  }
}

// n minus a maximum matching of the reduced DAG's bipartite graph; at least the width (a cover by
// disjoint paths is a partition into chains, Dilworth), and sometimes more.
TEST(NimbleSchedulePathCover, CountIsNodesMinusMaximumMatching) {
  for (uint32_t seed = 1; seed <= 30; ++seed) {
    std::mt19937 rng(seed);
    const int n = 1 + static_cast<int>(rng() % 80);
    const Adjacency succs = RandomAdjacency(rng, n, (rng() % 30) / 100.0);
    const Adjacency reduced = autograph::TransitiveReduction(succs);
    const Adjacency paths = autograph::MinimumPathCover(reduced);
    ExpectPathCover(reduced, paths, "seed " + std::to_string(seed));
    const auto match = autograph::MaximumBipartiteMatching(reduced, n);
    const int matched = static_cast<int>(std::count_if(match.begin(), match.end(), [](int m) { return m >= 0; }));
    EXPECT_EQ(static_cast<int>(paths.size()), n - matched) << "seed " << seed;
    EXPECT_GE(static_cast<int>(paths.size()), autograph::DagWidth(succs)) << "seed " << seed;
  }
  // a, b -> c -> d, e: width 2 ({a, b}), but disjoint paths need 3 (c continues only one of a, b).
  const Adjacency bowtie{{2}, {2}, {3, 4}, {}, {}};
  EXPECT_EQ(autograph::DagWidth(bowtie), 2);
  EXPECT_EQ(autograph::MinimumPathCover(bowtie).size(), 3u);
}

// --- NimbleSchedule ----------------------------------------------------------------------------

TEST(NimbleSchedule, RandomDagsGiveValidSchedulesWithinMaxStreams) {
  for (uint32_t seed = 1; seed <= 40; ++seed) {
    std::mt19937 rng(seed);
    const int n = static_cast<int>(rng() % 70);
    const double density = (rng() % 40) / 100.0;
    const double views = seed % 3 == 0 ? 0.2 : 0.0;
    const OpGraph g = RandomDag(rng, n, density, views);
    int kernels = 0;
    for (const auto& node : g.nodes()) kernels += node.kind != OpKind::View;
    for (int max_streams : {1, 2, 3, 5, 8, 64}) {
      NimbleStats stats;
      const Schedule s = NimbleSchedule(g, max_streams, &stats);
      const std::string context = "seed " + std::to_string(seed) + " n " + std::to_string(n) + " max_streams " +
                                  std::to_string(max_streams);
      ASSERT_EQ(ValidationError(s, g), "") << context;
      EXPECT_LE(s.max_groups(), max_streams) << context;
      EXPECT_LE(stats.streams, max_streams) << context;
      EXPECT_LE(s.max_groups(), stats.streams) << context;
      EXPECT_LE(stats.streams, std::max(stats.chains, n > 0 ? 1 : 0)) << context;
      EXPECT_LE(stats.chains, kernels) << context;
      if (views == 0) {
        const int width = autograph::DagWidth(SuccsOf(g));
        EXPECT_GE(stats.chains, width) << context;
        // A stream is a sequence of chains each ending before the next starts: a chain of the order,
        // so (Dilworth) there are at least `width` of them unless folding cut them down.
        EXPECT_GE(stats.streams, std::min(width, max_streams)) << context;
      }
      // One stream: one group per stage. No edge between streams: one stage.
      if (stats.streams == 1) {
        EXPECT_EQ(s.num_groups(), static_cast<int>(s.stages.size())) << context;
      }
      if (stats.cross_stream_edges == 0 && n > 0) {
        EXPECT_EQ(s.stages.size(), 1u) << context;
      }
      EXPECT_EQ(NimbleSchedule(g, max_streams).stages.size(), s.stages.size()) << context;
      // Every group names its Nimble stream, so the executor keeps a chain on one stream across
      // stages: the edges between the schedule's streams are exactly Nimble's cross-stream edges.
      std::vector<int> stream_of(g.size(), -1);
      for (const auto& stage : s.stages) {
        ASSERT_EQ(stage.streams.size(), stage.groups.size()) << context;
        for (size_t i = 0; i < stage.groups.size(); ++i)
          for (int op : stage.groups[i]) stream_of[op] = stage.streams[i];
      }
      int cross = 0;
      for (int v = 0; v < g.size(); ++v)
        for (int w : g.succs(v)) cross += stream_of[v] != stream_of[w];
      EXPECT_EQ(cross, stats.cross_stream_edges) << context;
    }
  }
}

TEST(NimbleSchedule, ForkJoinGetsOneStreamPerBranch) {
  // 0 -> three branches (1-2, 3-4, 5-6) -> 7
  const OpGraph g = MakeGraph(8, {{0, 1}, {1, 2}, {0, 3}, {3, 4}, {0, 5}, {5, 6}, {2, 7}, {4, 7}, {6, 7}});
  NimbleStats stats;
  const Schedule s = NimbleSchedule(g, 8, &stats);
  ASSERT_EQ(ValidationError(s, g), "");
  EXPECT_EQ(stats.chains, 3);
  EXPECT_EQ(stats.streams, 3);
  EXPECT_EQ(stats.cross_stream_edges, 4);  // the fork to two branches, two branches to the join
  const auto at = Placement(s, g.size());
  std::set<std::pair<int, int>> branch_groups;
  for (int first : {1, 3, 5}) {
    EXPECT_EQ(at[first], at[first + 1]) << "branch " << first << " is split";
    branch_groups.insert(at[first]);
  }
  EXPECT_EQ(branch_groups.size(), 3u);
  // The branches share a stage (the fork ends its stream's group), so they overlap on any backend.
  EXPECT_EQ(at[1].first, at[3].first);
  EXPECT_EQ(at[1].first, at[5].first);
  EXPECT_LT(at[0].first, at[1].first);
  EXPECT_LT(at[2].first, at[7].first);
}

TEST(NimbleSchedule, ChainIsOneStreamAndOneStage) {
  const OpGraph g = MakeGraph(6, {{0, 1}, {1, 2}, {2, 3}, {3, 4}, {4, 5}, {0, 5}});
  NimbleStats stats;
  const Schedule s = NimbleSchedule(g, 4, &stats);
  ASSERT_EQ(s.stages.size(), 1u);
  EXPECT_EQ(s.stages[0].groups, (std::vector<std::vector<int>>{{0, 1, 2, 3, 4, 5}}));
  EXPECT_EQ(stats.chains, 1);
  EXPECT_EQ(stats.streams, 1);
  EXPECT_EQ(stats.cross_stream_edges, 0);
}

// Two fork-joins in a row: the second's side branch starts after the first's ends, so they share a
// stream: three chains, two streams.
TEST(NimbleSchedule, ChainsThatCannotOverlapShareAStream) {
  // 0 -> {1, 2} -> 3 -> {4, 5} -> 6
  const OpGraph g = MakeGraph(7, {{0, 1}, {0, 2}, {1, 3}, {2, 3}, {3, 4}, {3, 5}, {4, 6}, {5, 6}});
  NimbleStats stats;
  const Schedule s = NimbleSchedule(g, 8, &stats);
  ASSERT_EQ(ValidationError(s, g), "");
  EXPECT_EQ(stats.chains, 3);
  EXPECT_EQ(stats.streams, 2);
  EXPECT_EQ(s.max_groups(), 2);
}

TEST(NimbleSchedule, FoldsStreamsBeyondMaxStreams) {
  // 0 -> six single-op branches -> 7
  std::vector<std::pair<int, int>> edges;
  for (int b = 1; b <= 6; ++b) edges.insert(edges.end(), {{0, b}, {b, 7}});
  const OpGraph g = MakeGraph(8, edges);
  for (int max_streams : {1, 2, 4, 6}) {
    NimbleStats stats;
    const Schedule s = NimbleSchedule(g, max_streams, &stats);
    ASSERT_EQ(ValidationError(s, g), "") << max_streams;
    EXPECT_EQ(stats.chains, 6) << max_streams;
    EXPECT_EQ(stats.streams, max_streams) << max_streams;
    EXPECT_EQ(s.max_groups(), max_streams) << max_streams;
  }
}

// Views launch nothing: they take no chain of their own and run where their producer runs.
TEST(NimbleSchedule, ViewsRunOnTheirProducersStream) {
  OpGraph g;
  const int a = AddOp(g, 0, 0), view = AddOp(g, 0, 0, OpKind::View), b = AddOp(g, 0, 0), c = AddOp(g, 0, 0), join = AddOp(g, 0, 0);
  const int input_view = AddOp(g, 0, 0, OpKind::View), d = AddOp(g, 0, 0);
  g.AddEdge(a, view);
  g.AddEdge(view, b);
  g.AddEdge(b, join);
  g.AddEdge(c, join);
  g.AddEdge(input_view, d);
  NimbleStats stats;
  const Schedule s = NimbleSchedule(g, 8, &stats);
  ASSERT_EQ(ValidationError(s, g), "");
  EXPECT_EQ(stats.chains, 3);  // a-b-join (or a-b and c-join), c, d: the views count for nothing
  const auto at = Placement(s, g.size());
  EXPECT_EQ(at[view], at[a]);
  EXPECT_EQ(at[b], at[a]);
  EXPECT_EQ(at[input_view].first, 0);
}

TEST(NimbleSchedule, EmptyGraphGivesEmptySchedule) {
  NimbleStats stats;
  EXPECT_TRUE(NimbleSchedule(OpGraph(), 4, &stats).stages.empty());
  EXPECT_EQ(stats.chains, 0);
  EXPECT_EQ(stats.streams, 0);
}

TEST(NimbleSchedule, RejectsMaxStreamsBelowOne) {
  const OpGraph g = MakeGraph(2, {{0, 1}});
  for (int max_streams : {0, -3}) {
    try {
      NimbleSchedule(g, max_streams);
      ADD_FAILURE() << "max_streams " << max_streams << " was accepted";
    } catch (const autograph::ScheduleError& e) {
      EXPECT_NE(std::string(e.what()).find("max_streams"), std::string::npos) << e.what();
    }
  }
}

// SqueezeNet imported at a small input size (the structure does not depend on it). Inception-v3 would
// be the richer case, but lowering it alone takes seconds.
TEST(NimbleSchedule, SqueezeNetScheduleValidates) {
  const std::string path = autograph::testing::ZooModel("squeezenet");
  if (!std::filesystem::exists(path)) GTEST_SKIP() << path << " is missing: run models/export.py";
  torch::NoGradGuard no_grad;
  auto specs = autograph::ReadInputSpecs(*autograph::InputSpecPathFor(path));
  specs[0].shape = {1, 3, 128, 128};
  const OpGraph g =
      autograph::ImportOpGraph(autograph::LowerModule(autograph::LoadModule(path)), autograph::MakeExampleInputs(specs));
  const int width = autograph::DagWidth(SuccsOf(g));
  for (int max_streams : {1, 4, 64}) {
    NimbleStats stats;
    const Schedule s = NimbleSchedule(g, max_streams, &stats);
    EXPECT_EQ(ValidationError(s, g), "") << max_streams;
    EXPECT_LE(s.max_groups(), max_streams);
    EXPECT_LE(stats.streams, max_streams);
    // The two expand convolutions of a fire module run side by side in one stage.
    if (max_streams > 1) {
      EXPECT_EQ(s.max_groups(), 2) << max_streams;
    }
    std::cout << "squeezenet (" << g.size() << " ops, width " << width << "), max_streams " << max_streams << ": "
              << stats.chains << " chains, " << stats.streams << " streams, " << stats.cross_stream_edges
              << " cross-stream edges, " << s.stages.size() << " stages\n";
  }
}

}  // namespace
