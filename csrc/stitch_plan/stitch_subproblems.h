#pragma once
// Decomposition of the stitch planning problem: two stitchable nodes "could share" a group when the
// pairwise rules allow it (domain, split, weight, apart, and no non-stitchable node on a path between
// them); its connected components hold every group. A dependence cycle between groups of different
// components would still couple them, so components joined by cycles in the graph contracted by
// components are one subproblem (a strongly connected component of that graph). Subproblems then
// share no cost term or constraint.
#include <vector>

#include "stitch_plan/plan_stitch_groups.h"
#include "stitch_plan/stitch_dag.h"

namespace autograph::stitch_planner {

// The pairwise part of the rules: whether two stitchable nodes could ever share a group.
class PairRules {
 public:
  PairRules(const StitchGraph& graph, const Dag& dag, const StitchPlanOptions& options);

  bool CanShare(int a, int b) const;

  // Nodes reachable from v by a path of one edge or more.
  const Bitset& Descendants(int v) const { return descendants_[v]; }

 private:
  const StitchGraph& graph_;
  int max_weight_;
  std::vector<Bitset> descendants_;
  std::vector<Bitset> through_fixed_;  // reachable from v through a non-stitchable node
  std::vector<std::vector<int>> apart_of_;
};

// Independent subproblems: stitchable node ids, ascending; subproblems ordered by their first node.
std::vector<std::vector<int>> FindSubproblems(const StitchGraph& graph, const Dag& dag, const PairRules& rules);

}  // namespace autograph::stitch_planner
