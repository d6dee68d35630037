#pragma once
// The stitch planner's integer linear program for one subproblem (solved with GLPK; built only with
// AUTOGRAPH_WITH_GLPK). Group g is named by member g (the representative formulation): y[i][g] exists
// for g <= i only, y[g][g] says whether group g is used, and a member joins group g only with g in it,
// so groups are numbered by their smallest member and no two labellings are the same plan. Rows:
// one group per member, joining only a used group, pairwise rules, the weight budget, convexity,
// an order of the groups' kernels (no dependence cycle between groups), and the traffic of every tensor
// a member touches; the objective is launches plus boundary bytes over bandwidth.
#include <vector>

#include "stitch_plan/plan_stitch_groups.h"
#include "stitch_plan/stitch_dag.h"
#include "stitch_plan/stitch_subproblems.h"

namespace autograph::stitch_planner {

struct IlpOutcome {
  bool optimal = false;
  bool has_solution = false;
  std::vector<int> group_of_member;  // per member: the node id naming its group (its smallest member)
  int columns = 0, rows = 0;
};

// `members`: the subproblem's stitchable nodes, ascending (FindSubproblems).
IlpOutcome SolveWithIlp(const StitchGraph& graph, const Dag& dag, const PairRules& rules,
                        const StitchPlanOptions& options, const std::vector<int>& members);

}  // namespace autograph::stitch_planner
