#pragma once
// Input checks, the objective and the feasibility of a grouping, as the planner, the ILP's answer check
// and the tests' brute force use them (rules in plan_stitch_groups.cpp's header comment).
#include <string>
#include <vector>

#include "stitch_plan/plan_stitch_groups.h"
#include "stitch_plan/stitch_dag.h"

namespace autograph::stitch_planner {

// Throw InputError naming what is malformed: ids out of range, edges against the topological order,
// a stitchable node without a domain, bad sizes or weights; options that are not finite or positive;
// a grouping of the wrong length.
void ValidateGraph(const StitchGraph& graph);
void ValidateOptions(const StitchPlanOptions& options);
void ValidateGrouping(const StitchGraph& graph, const std::vector<int>& group_of);

// Launches plus boundary bytes over bandwidth (microseconds).
double ComputeCost(const StitchGraph& graph, const std::vector<int>& group_of, const StitchPlanOptions& options);

// Whether `group_of` is feasible; *why (when given) says which rule a group breaks.
bool CheckFeasible(const StitchGraph& graph, const Dag& dag, const std::vector<int>& group_of,
                   const StitchPlanOptions& options, std::string* why);

}  // namespace autograph::stitch_planner
