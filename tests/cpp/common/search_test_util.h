#pragma once
// Small graphs and toy latency models for the tests of the schedule searches (IOS, AutoGraph).
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdint>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/op_graph.h"
#include "core/schedule.h"
#include "executor/validate_schedule.h"
#include "search/cost/cost_model.h"
#include "toy_op_graph.h"

namespace autograph::testing {

inline OpGraph MakeGraph(const std::vector<double>& flops, const std::vector<std::pair<int, int>>& edges) {
  OpGraph g;
  for (double f : flops) AddOp(g, f, 0);
  for (auto [u, v] : edges) g.AddEdge(u, v);
  return g;
}

// n ops with random FLOPs in 0..99, each forward edge present with probability `density`.
inline OpGraph RandomDag(std::mt19937& rng, int n, double density) {
  OpGraph g;
  for (int i = 0; i < n; ++i) AddOp(g, rng() % 100, 0);
  for (int u = 0; u < n; ++u)
    for (int v = u + 1; v < n; ++v)
      if ((rng() % 1000) / 1000.0 < density) g.AddEdge(u, v);
  return g;
}

inline std::vector<int> AllIds(const OpGraph& g) {
  std::vector<int> ids(g.size());
  for (int i = 0; i < g.size(); ++i) ids[i] = i;
  return ids;
}

// A toy latency model. An op takes 0.02 ms plus flops / 100. A concurrent stage takes as long as its
// longest group or 60% of its total work, whichever is more (streams compete for the device), plus
// 0.01 ms per stage and 0.05 ms per extra stream. Running two ops side by side pays off when both are
// large, not when one is tiny; a chain is cheapest as one group.
class ToyCost : public autograph::CostModel {
 public:
  std::string name() const override { return "toy"; }
  double OperatorMs(const OpGraph& graph, int op) override { return 0.02 + graph.node(op).flops / 100; }
  double StageMs(const OpGraph& graph, const Stage& stage) override {
    ++calls;
    if (stage.strategy != StageStrategy::Concurrent) throw std::logic_error("ToyCost: only concurrent stages");
    double longest = 0, total = 0;
    for (const auto& group : stage.groups) {
      double ms = 0;
      for (int op : group) ms += OperatorMs(graph, op);
      longest = std::max(longest, ms);
      total += ms;
    }
    return std::max(longest, 0.6 * total) + 0.01 + 0.05 * (static_cast<double>(stage.groups.size()) - 1);
  }
  int64_t calls = 0;
};

// ToyCost, plus Merge stages: one launch for the whole stage and half the work of its ops (a merged
// kernel fills the device better).
class ToyMergeCost : public ToyCost {
 public:
  double StageMs(const OpGraph& graph, const Stage& stage) override {
    if (stage.strategy == StageStrategy::Concurrent) return ToyCost::StageMs(graph, stage);
    ++merged_calls;
    double flops = 0;
    for (const auto& group : stage.groups)
      for (int op : group) flops += graph.node(op).flops;
    return 0.02 + 0.5 * flops / 100 + 0.01;
  }
  int64_t merged_calls = 0;
};

inline OpGraph ForkJoin(double branch_flops) {
  return MakeGraph({0, branch_flops, branch_flops, branch_flops, 0},
                   {{0, 1}, {0, 2}, {0, 3}, {1, 4}, {2, 4}, {3, 4}});
}

inline std::string Dump(const Schedule& s) { return autograph::ScheduleToJson(s).dump(); }

inline std::string ValidationError(const Schedule& s, const OpGraph& g) {
  try {
    autograph::ValidateSchedule(s, g);
  } catch (const autograph::ScheduleError& e) {
    return e.what();
  }
  return "";
}

}  // namespace autograph::testing
