// StagePlan's cross-stream bookkeeping, checked on the CPU (the plan is device-independent): only
// values made during the run on another stream are marked for record_stream, never the graph's
// inputs or constants (weights), which stay alive until after the join.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <set>

#include "executor/stage_executor.h"
#include "graph_pass/import_op_graph.h"
#include "graph_pass/lower_module.h"
#include "search/simple_schedulers.h"
#include "small_test_modules.h"

namespace {

TEST(StagePlan, MarksOnlyValuesMadeOnAnotherStream) {
  torch::NoGradGuard no_grad;
  const std::vector<c10::IValue> inputs = {autograph::testing::BranchyInput()};
  const autograph::OpGraph graph =
      autograph::ImportOpGraph(autograph::LowerModule(autograph::testing::BranchyModule()), inputs);
  int side_readers_of_input = 0, foreign = 0;
  for (uint64_t seed = 1; seed <= 20; ++seed) {
    const autograph::StagePlan plan(graph, autograph::RandomSchedule(graph, seed, 3));
    std::set<int> made;  // slots some step writes: neither inputs nor constants
    for (size_t k = 0; k < plan.compiled.num_steps(); ++k)
      for (int slot : plan.compiled.step_outputs(k)) made.insert(slot);
    for (const auto& sync : plan.ops_in_order) {
      for (int slot : sync.foreign_slots) EXPECT_TRUE(made.count(slot)) << "seed " << seed << ": slot " << slot;
      foreign += static_cast<int>(sync.foreign_slots.size());
      if (sync.stream == 0) continue;
      for (size_t k = sync.begin; k < sync.end; ++k)
        for (int slot : plan.compiled.step_inputs(k)) side_readers_of_input += !made.count(slot);
    }
  }
  // The schedules did put readers of the input and the weights on side streams, and did read
  // values across streams: the checks above were not vacuous.
  EXPECT_GT(side_readers_of_input, 0);
  EXPECT_GT(foreign, 0);
}

}  // namespace
