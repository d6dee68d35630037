// The stitch planner: groups of memory-intensive operators that run as one stitched kernel. Stitchable
// nodes are first split into independent subproblems; each small one is an ILP solved with GLPK, each
// large one (or one whose ILP ran out of time) goes to a greedy merger.
//
// Feasibility, as the tests and the ILP use it:
//  - a group shares one domain and one split (-1 = any), and `apart` pairs never share a group;
//  - a group of two or more nodes fits max_weight (a node heavier than the budget may still run alone:
//    it has to run somewhere);
//  - the groups, with every non-stitchable node as a group of its own, form a DAG. This implies that
//    each group is convex (no path leaves it and comes back), and also rules out two convex groups that
//    need each other (a1 -> b1 and b2 -> a2 with {a1, a2} and {b1, b2} grouped): neither kernel could
//    run first.
//
// The parts: input checks, cost and feasibility (stitch_feasibility), the split into independent
// subproblems (stitch_subproblems), the ILP (stitch_ilp over mixed_integer_program, GLPK) and the
// greedy planner (greedy_stitch_planner).
#include "stitch_plan/plan_stitch_groups.h"

#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "autograph/error.h"
#include "stitch_plan/greedy_stitch_planner.h"
#include "stitch_plan/stitch_dag.h"
#include "stitch_plan/stitch_feasibility.h"
#include "stitch_plan/stitch_ilp.h"
#include "stitch_plan/stitch_subproblems.h"

namespace autograph {

using namespace stitch_planner;  // NOLINT: the planner's parts, internal to this folder

double StitchPlanCost(const StitchGraph& graph, const std::vector<int>& group_of, const StitchPlanOptions& options) {
  ValidateGraph(graph);
  ValidateOptions(options);
  ValidateGrouping(graph, group_of);
  return ComputeCost(graph, group_of, options);
}

bool StitchPlanFeasible(const StitchGraph& graph, const std::vector<int>& group_of, const StitchPlanOptions& options,
                        std::string* why) {
  ValidateGraph(graph);
  ValidateGrouping(graph, group_of);
  return CheckFeasible(graph, BuildDag(graph), group_of, options, why);
}

StitchPlan PlanStitchGroups(const StitchGraph& graph, const StitchPlanOptions& options) {
  ValidateGraph(graph);
  ValidateOptions(options);
  const int n = static_cast<int>(graph.nodes.size());
  const Dag dag = BuildDag(graph);
  const PairRules rules(graph, dag, options);
  StitchPlan plan;
  std::vector<int> group_of(n, -1);  // groups named by a member node while planning
  for (int v = 0; v < n; ++v)
    if (graph.nodes[v].stitchable) group_of[v] = v;
  std::vector<char> greedy_nodes(n, 0);
  bool any_greedy = false;

  for (const std::vector<int>& members : FindSubproblems(graph, dag, rules)) {
    if (members.size() < 2) continue;  // a lone node is its own group: nothing to plan
#ifdef AUTOGRAPH_WITH_GLPK
    if (static_cast<int>(members.size()) <= options.ilp_max_nodes) {
      const IlpOutcome outcome = SolveWithIlp(graph, dag, rules, options, members);
      std::vector<int> with_ilp = group_of;
      if (outcome.has_solution)
        for (size_t i = 0; i < members.size(); ++i) with_ilp[members[i]] = outcome.group_of_member[i];
      const bool ilp_feasible = outcome.has_solution && CheckFeasible(graph, dag, with_ilp, options, nullptr);
      if (outcome.optimal && ilp_feasible) {
        group_of.swap(with_ilp);
        ++plan.subproblems_ilp;
        continue;
      }
      // Out of time (or no usable answer): the better of the incumbent and the greedy plan.
      std::vector<char> movable(n, 0);
      for (int m : members) movable[m] = 1;
      std::vector<int> with_greedy = GreedyStitchPlanner(graph, dag, options, group_of, movable).Run();
      if (ilp_feasible && ComputeCost(graph, with_ilp, options) < ComputeCost(graph, with_greedy, options))
        group_of.swap(with_ilp);
      else
        group_of.swap(with_greedy);
      ++plan.subproblems_greedy;
      continue;
    }
#endif
    for (int m : members) greedy_nodes[m] = 1;
    any_greedy = true;
    ++plan.subproblems_greedy;
  }
  if (any_greedy) group_of = GreedyStitchPlanner(graph, dag, options, group_of, greedy_nodes).Run();

  // Number the groups 0.. in order of their first node.
  std::unordered_map<int, int> number_of;
  for (int v = 0; v < n; ++v)
    if (group_of[v] >= 0)
      group_of[v] = number_of.emplace(group_of[v], static_cast<int>(number_of.size())).first->second;
  std::string why;
  if (!CheckFeasible(graph, dag, group_of, options, &why))
    throw Error("stitch planner: internal error, the plan is infeasible: " + why);
  plan.group_of = std::move(group_of);
  plan.num_groups = static_cast<int>(number_of.size());
  plan.cost_us = ComputeCost(graph, plan.group_of, options);
  return plan;
}

}  // namespace autograph
