#include "stitch_plan/stitch_ilp.h"

#ifdef AUTOGRAPH_WITH_GLPK

#include <algorithm>
#include <cstdint>
#include <unordered_map>

#include "stitch_plan/mixed_integer_program.h"

namespace autograph::stitch_planner {

namespace {

using Terms = MixedIntegerProgram::Terms;
using Bound = MixedIntegerProgram::Bound;

class StitchIlp {
 public:
  StitchIlp(const StitchGraph& graph, const Dag& dag, const PairRules& rules, const StitchPlanOptions& options,
            const std::vector<int>& members)
      : graph_(graph), dag_(dag), rules_(rules), options_(options), members_(members),
        n_(static_cast<int>(graph.nodes.size())), k_(static_cast<int>(members.size())), local_(n_, -1) {
    for (int i = 0; i < k_; ++i) local_[members_[i]] = i;
  }

  IlpOutcome Solve() {
    AddAssignment();
    FindScope();
    AddConvexity();
    if (k_ >= 4) AddKernelOrder();
    AddTraffic();
    IlpOutcome outcome;
    outcome.columns = model_.columns();
    outcome.rows = model_.rows();
    const MixedIntegerProgram::Result result = model_.Solve(options_.ilp_time_limit_s);
    outcome.optimal = result.optimal;
    outcome.has_solution = result.has_solution;
    if (!result.has_solution) return outcome;
    outcome.group_of_member.assign(k_, -1);
    for (int i = 0; i < k_; ++i)
      for (int g = 0; g <= i; ++g)
        if (y_[i][g] && result.values[y_[i][g]] > 0.5) outcome.group_of_member[i] = members_[g];
    for (int label : outcome.group_of_member)
      if (label < 0) outcome.has_solution = outcome.optimal = false;
    return outcome;
  }

 private:
  // y[node][g]'s column, 0 when node may not join group g.
  int Y(int node, int g) const { return local_[node] >= g ? y_[local_[node]][g] : 0; }

  // The y columns (a launch per used group), one group per member, joining only a used group, pairs
  // that may not share, and the weight budget (a node heavier than the budget may still run alone).
  void AddAssignment() {
    y_.assign(k_, std::vector<int>(k_, 0));
    for (int i = 0; i < k_; ++i)
      for (int g = 0; g <= i; ++g)
        if (g == i || rules_.CanShare(members_[g], members_[i]))
          y_[i][g] = model_.AddBinary(g == i ? options_.launch_us : 0);
    candidates_.assign(k_, Bitset(n_));
    for (int g = 0; g < k_; ++g) {
      Terms one_group;
      for (int h = 0; h <= g; ++h) one_group.push_back({y_[g][h], 1});
      model_.AddRow(one_group, Bound::Exactly, 1);
      std::vector<int> joiners;
      for (int i = g; i < k_; ++i)
        if (y_[i][g]) candidates_[g].Set(members_[i]), joiners.push_back(i);
      for (size_t p = 1; p < joiners.size(); ++p) {
        const int a = joiners[p];
        model_.AddRow({{y_[a][g], 1}, {y_[g][g], -1}}, Bound::AtMost, 0);  // joins only a used group
        for (size_t other = p + 1; other < joiners.size(); ++other)
          if (!rules_.CanShare(members_[a], members_[joiners[other]]))
            model_.AddRow({{y_[a][g], 1}, {y_[joiners[other]][g], 1}}, Bound::AtMost, 1);
      }
      const int room = options_.max_weight - graph_.nodes[members_[g]].weight;
      Terms budget;
      int64_t joiner_weight = 0;
      for (size_t p = 1; p < joiners.size(); ++p) {
        budget.push_back({y_[joiners[p]][g], graph_.nodes[members_[joiners[p]]].weight});
        joiner_weight += graph_.nodes[members_[joiners[p]]].weight;
      }
      budget.push_back({y_[g][g], -room});
      if (joiners.size() > 1 && joiner_weight > room) model_.AddRow(budget, Bound::AtMost, 0);
    }
  }

  // Scope: nodes on a path between two members (the only ones a path out of a group and back, or a
  // dependence cycle between groups, can pass); ids ascending.
  void FindScope() {
    Bitset reached(n_);
    for (int m : members_) reached |= rules_.Descendants(m);
    std::vector<char> reaches(n_, 0);
    for (int m : members_) reaches[m] = 1;
    for (int v = members_.back(); v >= members_.front(); --v)
      if (reaches[v])
        for (int p : dag_.pred[v]) reaches[p] = 1;
    for (int v = members_.front(); v <= members_.back(); ++v)
      if (local_[v] >= 0 || (reached.Test(v) && reaches[v])) scope_.push_back(v);
    in_scope_.assign(n_, 0);
    for (int v : scope_) in_scope_[v] = 1;
  }

  // Convexity: q[v][g] >= 1 when v is reached from group g by a path that has left g; then v may not
  // be in g. Only kept where a candidate of g is v or lies downstream.
  void AddConvexity() {
    std::vector<std::unordered_map<int, int>> q(n_);
    for (int v : scope_) {
      for (int g = 0; g < k_; ++g) {
        if (v <= members_[g]) continue;
        bool fed = false;
        for (int p : dag_.pred[v]) fed = fed || (in_scope_[p] && (Y(p, g) || q[p].count(g)));
        if (!fed || !(Y(v, g) || rules_.Descendants(v).Intersects(candidates_[g]))) continue;
        const int column = model_.AddContinuous(0, 1, 0);
        q[v][g] = column;
        for (int p : dag_.pred[v]) {
          if (!in_scope_[p]) continue;
          if (Y(p, g)) model_.AddRow({{column, 1}, {Y(p, g), -1}, {Y(v, g), 1}}, Bound::AtLeast, 0);
          if (q[p].count(g)) model_.AddRow({{column, 1}, {q[p][g], -1}}, Bound::AtLeast, 0);
        }
        if (Y(v, g)) model_.AddRow({{Y(v, g), 1}, {column, 1}}, Bound::AtMost, 1);
      }
    }
  }

  // Order: groups must be numbered so that every edge between two groups goes forward. t[v] is the
  // position of v's kernel; members of a group share it, an edge leaving a group adds one. Convex
  // groups can only form such a cycle with two groups of two members or more, so only for k >= 4.
  void AddKernelOrder() {
    const double span = static_cast<double>(scope_.size());
    std::vector<int> t(n_, 0);
    for (int v : scope_) t[v] = model_.AddContinuous(0, span, 0);
    for (int a : scope_)
      for (int b : dag_.succ[a]) {
        if (!in_scope_[b]) continue;
        bool may_share = false;
        for (int g = 0; g < k_; ++g) may_share = may_share || (Y(a, g) && Y(b, g));
        if (!may_share) {
          model_.AddRow({{t[b], 1}, {t[a], -1}}, Bound::AtLeast, 1);
          continue;
        }
        const int d = model_.AddContinuous(0, 1, 0);  // d >= y[a][g] - y[b][g]: 1 across groups
        for (int g = 0; g < k_; ++g)
          if (Y(a, g)) model_.AddRow({{d, 1}, {Y(a, g), -1}, {Y(b, g), 1}}, Bound::AtLeast, 0);
        model_.AddRow({{t[b], 1}, {t[a], -1}, {d, -1}}, Bound::AtLeast, 0);
      }
    for (int g = 0; g < k_; ++g)
      for (int i = g + 1; i < k_; ++i) {
        if (!y_[i][g]) continue;
        const int tv = t[members_[i]], tg = t[members_[g]];
        model_.AddRow({{tv, 1}, {tg, -1}, {y_[i][g], span}}, Bound::AtMost, span);
        model_.AddRow({{tg, 1}, {tv, -1}, {y_[i][g], span}}, Bound::AtMost, span);
      }
  }

  // Traffic of every tensor a member touches.
  void AddTraffic() {
    std::vector<int> touched;
    for (int m : members_) touched.insert(touched.end(), dag_.tensors_of[m].begin(), dag_.tensors_of[m].end());
    std::sort(touched.begin(), touched.end());
    touched.erase(std::unique(touched.begin(), touched.end()), touched.end());
    for (int index : touched) {
      const StitchTensor& tensor = graph_.tensors[index];
      if (tensor.bytes > 0) AddTensorTraffic(tensor);  // 0 bytes: an ordering edge only
    }
  }

  // Its write (when a member produces it and some reader is elsewhere) and one read per group that
  // reads it without producing it.
  void AddTensorTraffic(const StitchTensor& tensor) {
    const double cost = static_cast<double>(tensor.bytes) / options_.bytes_per_us;
    const int producer = tensor.producer;
    const bool producer_inside = producer >= 0 && local_[producer] >= 0;
    std::vector<int> readers;  // members that read it
    bool read_outside = false;
    for (int c : tensor.consumers) {
      if (local_[c] >= 0)
        readers.push_back(c);
      else
        read_outside = true;
    }
    std::sort(readers.begin(), readers.end());
    readers.erase(std::unique(readers.begin(), readers.end()), readers.end());
    if (producer_inside) {
      if (tensor.graph_output || read_outside) {
        model_.AddConstant(cost);
      } else if (!readers.empty()) {
        const int w = model_.AddContinuous(0, 1, cost);  // w >= y[p][g] - y[c][g]: a reader elsewhere
        for (int g = 0; g <= local_[producer]; ++g)
          if (Y(producer, g))
            for (int c : readers) model_.AddRow({{w, 1}, {Y(producer, g), -1}, {Y(c, g), 1}}, Bound::AtLeast, 0);
      }
    }
    if (readers.empty()) return;
    if (!producer_inside && readers.size() == 1) {
      model_.AddConstant(cost);
      return;
    }
    for (int g = 0; g < k_; ++g) {  // r >= y[c][g] - y[p][g]: group g reads it from memory
      int r = 0;
      for (int c : readers) {
        if (!Y(c, g)) continue;
        if (!r) r = model_.AddContinuous(0, 1, cost);
        model_.AddRow({{r, 1}, {Y(c, g), -1}, {producer_inside ? Y(producer, g) : 0, 1}}, Bound::AtLeast, 0);
      }
    }
  }

  const StitchGraph& graph_;
  const Dag& dag_;
  const PairRules& rules_;
  const StitchPlanOptions& options_;
  const std::vector<int>& members_;
  const int n_, k_;
  std::vector<int> local_;  // per node: its index in members_, -1 outside
  MixedIntegerProgram model_;
  std::vector<std::vector<int>> y_;
  std::vector<Bitset> candidates_;  // per group: nodes that may join it
  std::vector<int> scope_;
  std::vector<char> in_scope_;
};

}  // namespace

IlpOutcome SolveWithIlp(const StitchGraph& graph, const Dag& dag, const PairRules& rules,
                        const StitchPlanOptions& options, const std::vector<int>& members) {
  return StitchIlp(graph, dag, rules, options, members).Solve();
}

}  // namespace autograph::stitch_planner

#endif  // AUTOGRAPH_WITH_GLPK
