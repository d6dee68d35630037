#pragma once
// Pass: memory-intensive operators (elementwise, activations, bias and residual adds, softmax,
// layer norm, trailing-dim reductions) are grouped by the stitch planner (PlanStitchGroups, an
// ILP) and each group of two or more becomes one autograph::stitched node whose program is the
// group's statements. Shapes come from a run on example inputs; the rewritten graph computes the
// same values (each element by the same float operations, reductions in another order).
#include <ATen/core/ivalue.h>

#include <functional>
#include <memory>
#include <vector>

#include "graph_pass/graph_values.h"
#include "stitch_plan/plan_stitch_groups.h"

namespace torch::jit {
struct Graph;
}  // namespace torch::jit

namespace autograph {

struct StitchReport {
  int candidates = 0;     // nodes a program can express
  int groups = 0;         // stitched nodes created
  int groups_rejected = 0;  // planned groups the judge found no faster than their operators (left as they were)
  int ops_stitched = 0;   // the graph's operators replaced by them (a decomposed batch norm counts once)
  int subproblems_ilp = 0, subproblems_greedy = 0;
  double planned_cost_us = 0;  // the planner's objective for its plan
};

// Decides whether one planned group is worth its kernel: given a run of the group's operators as they
// are (each its own kernel, on the example run's inputs) and a run of the stitched kernel on the same
// inputs, returns true to stitch. The driver passes one that times both on the device.
using StitchGroupJudge = std::function<bool(const std::function<void()>& operators, const std::function<void()>& stitched)>;

// Rewrites the top-level block of a lowered graph (see LowerModule) in place. Groups that cannot be
// made contiguous without breaking an in-place write's order are left as they were, and so are
// groups `judge` (when given) rejects.
StitchReport StitchMemoryBoundOps(std::shared_ptr<torch::jit::Graph>& graph,
                                  const std::vector<c10::IValue>& example_inputs,
                                  const StitchPlanOptions& options = {}, const StitchGroupJudge& judge = nullptr);
// The same with shapes and data from the recorded run of `graph` (it runs again only when batch
// norms were split or in-place operators made functional first).
StitchReport StitchMemoryBoundOps(std::shared_ptr<torch::jit::Graph>& graph, const GraphValues& values,
                                  const StitchPlanOptions& options = {}, const StitchGroupJudge& judge = nullptr);

}  // namespace autograph
