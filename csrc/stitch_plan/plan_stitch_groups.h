#pragma once
// The stitch planner: which memory-intensive operators run together as one stitched kernel.
// Formulated as an integer linear program (solved with GLPK) over an abstract operator DAG, so it
// is independent of TorchScript: groups are convex (no path leaves a group and comes back) and the
// graph with each group contracted stays acyclic (two convex groups may not each need the other), every
// member of a group shares one iteration domain and one reduction split (one thread mapping), a
// group's total weight fits the on-chip budget, and the objective is launches plus the bytes that
// cross group boundaries. Above a size cap, or when the solver runs out of time, a greedy planner
// answers instead.
#include <cstdint>
#include <string>
#include <vector>

namespace autograph {

struct StitchNode {
  bool stitchable = false;  // false: never in a group (a GEMM, a view chain, control flow, ...)
  int domain = -1;          // stitchable: equal ids = same iteration domain (broadcast shape)
  int split = -1;           // stitchable: reduction split (trailing dims reduced); -1 = any (elementwise)
  int weight = 1;           // stitchable: statements it adds to a program (the on-chip budget counts them)
};

// A tensor: produced by one node (or outside the graph: producer -1, e.g. a graph input or a
// constant), read by some nodes.
struct StitchTensor {
  int producer = -1;
  std::vector<int> consumers;
  int64_t bytes = 0;
  bool graph_output = false;  // must be written to memory whatever the grouping
};

struct StitchGraph {
  std::vector<StitchNode> nodes;      // ids are a topological order
  std::vector<StitchTensor> tensors;  // the edges: producer -> each consumer
  // Pairs (a, b) that may not share a group even when otherwise allowed (e.g. b reads a through a
  // view that the stitched kernel cannot express).
  std::vector<std::pair<int, int>> apart;
};

struct StitchPlanOptions {
  double launch_us = 4.0;            // cost of one kernel launch
  double bytes_per_us = 2.0e6;       // memory bandwidth (2 TB/s ~ H100 HBM3 at a realistic fraction)
  int max_weight = 64;               // on-chip budget: statements per group
  int ilp_max_nodes = 24;            // size cap: larger subproblems go to the greedy planner
  double ilp_time_limit_s = 2.0;     // per subproblem; on timeout the best of ILP incumbent and greedy
};

struct StitchPlan {
  std::vector<int> group_of;  // per node: group id 0..num_groups-1, -1 for non-stitchable nodes
  int num_groups = 0;
  double cost_us = 0;         // the objective of this plan (StitchPlanCost)
  int subproblems_ilp = 0;    // solved to optimality by the ILP
  int subproblems_greedy = 0; // over the size cap or timed out
};

// Throws autograph::InputError for a malformed graph (ids out of range, edges against the
// topological order, stitchable node without a domain).
StitchPlan PlanStitchGroups(const StitchGraph& graph, const StitchPlanOptions& options = {});

// The objective of a grouping (launches + boundary bytes / bandwidth), and whether it is feasible
// (convex, one domain and split per group, within the budget, `apart` respected). Used by the
// tests' brute force and by the greedy planner.
double StitchPlanCost(const StitchGraph& graph, const std::vector<int>& group_of, const StitchPlanOptions& options);
bool StitchPlanFeasible(const StitchGraph& graph, const std::vector<int>& group_of, const StitchPlanOptions& options,
                        std::string* why = nullptr);

}  // namespace autograph
