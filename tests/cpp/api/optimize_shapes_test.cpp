// optimize with OptimizeOptions::shapes: one schedule per shape, each call on the plan for its shapes
// (or the nearest), saved and loaded with the module; bad shapes are clear errors. With
// plan_new_shapes, shapes first seen at a call are planned then, up to the limit.
#include <gtest/gtest.h>

#include <torch/script.h>
#include <torch/torch.h>

#include <atomic>
#include <sstream>
#include <thread>

#include "autograph/error.h"
#include "api/option_table.h"
#include "api/plan_other_shapes.h"
#include "autograph/optimize.h"
#include "executor/program.h"
#include "small_test_modules.h"
#include "zoo_test_util.h"

namespace {

using autograph::testing::BranchyInput;
using autograph::testing::BranchyModule;
using autograph::testing::Flatten;

autograph::OptimizeOptions BranchyOptions() {
  autograph::OptimizeOptions options;
  options.example_inputs = {BranchyInput(2)};
  options.search.method = "greedy";  // quick: what is tested is which plan runs, not how it was found
  options.shapes = {{{1, 4, 16, 16}}, {{8, 4, 32, 32}}};
  return options;
}

c10::intrusive_ptr<autograph::Program> ProgramOf(const torch::jit::Module& m) {
  return m.attr("program").toCustomClass<autograph::Program>();
}

void ExpectSameOutputs(torch::jit::Module& optimized, torch::jit::Module& original, int64_t batch, int64_t size) {
  torch::NoGradGuard no_grad;
  const at::Tensor x = torch::randn({batch, 4, size, size});
  const auto got = Flatten({optimized.forward({x})});
  const auto want = Flatten({original.forward({x})});
  ASSERT_EQ(got.size(), want.size());
  // Float32 on the CPU, the same kernels in another order: 1e-5 of each output's scale.
  for (size_t i = 0; i < got.size(); ++i)
    EXPECT_LE((got[i] - want[i]).abs().max().item<double>(), 1e-5 * want[i].abs().max().item<double>() + 1e-6)
        << "batch " << batch << ", size " << size << ", output " << i;
}

TEST(OptimizeShapes, EachShapeGetsAPlanAndCallsRunTheNearest) {
  torch::jit::Module original = BranchyModule();
  autograph::OptimizeReport report;
  torch::jit::Module optimized = autograph::optimize(original, BranchyOptions(), &report);
  ASSERT_EQ(report.shape_plans.size(), 2u);
  for (const autograph::ShapePlan& p : report.shape_plans) {
    EXPECT_TRUE(p.skipped.empty()) << p.skipped;
    EXPECT_GT(p.stages, 0);
  }
  EXPECT_EQ(report.shape_plans[1].shapes, (std::vector<std::vector<int64_t>>{{8, 4, 32, 32}}));
  auto program = ProgramOf(optimized);
  ASSERT_EQ(program->num_plans(), 3u);
  auto plan_for = [&](int64_t batch, int64_t size) { return program->PlanFor({torch::zeros({batch, 4, size, size})}); };
  EXPECT_EQ(plan_for(2, 16), 0u);  // the example's
  EXPECT_EQ(plan_for(1, 16), 1u);
  EXPECT_EQ(plan_for(8, 32), 2u);
  EXPECT_EQ(plan_for(6, 30), 2u);  // nearest
  EXPECT_EQ(plan_for(1, 8), 1u);
  for (auto [batch, size] : {std::pair<int64_t, int64_t>{2, 16}, {1, 16}, {8, 32}, {5, 24}})
    ExpectSameOutputs(optimized, original, batch, size);

  // Saved and loaded, the plans stay.
  std::stringstream saved;
  optimized.save(saved);
  torch::jit::Module loaded = torch::jit::load(saved);
  ASSERT_EQ(ProgramOf(loaded)->num_plans(), 3u);
  EXPECT_EQ(ProgramOf(loaded)->PlanFor({torch::zeros({8, 4, 32, 32})}), 2u);
  ExpectSameOutputs(loaded, original, 8, 32);
}

TEST(OptimizeShapes, OtherTensorCountsOrRanksAreInputErrors) {
  torch::jit::Module original = BranchyModule();
  auto options = BranchyOptions();
  options.shapes = {{{1, 4, 16, 16}, {1, 4}}};
  EXPECT_THROW(autograph::optimize(original, options), autograph::InputError);
  options.shapes = {{{1, 4, 16}}};
  try {
    autograph::optimize(original, options);
    ADD_FAILURE() << "a shape of another rank was accepted";
  } catch (const autograph::InputError& e) {
    EXPECT_NE(std::string(e.what()).find("rank"), std::string::npos) << e.what();
  }
}

// No shapes listed; up to `limit` planned at call time.
autograph::OptimizeOptions PlanNewShapesOptions(int limit) {
  autograph::OptimizeOptions options = BranchyOptions();
  options.shapes = {};
  options.plan_new_shapes = limit;
  return options;
}

TEST(OptimizeShapes, NewShapesArePlannedAtTheirFirstCallUpToTheLimit) {
  torch::jit::Module original = BranchyModule();
  torch::jit::Module optimized = autograph::optimize(original, PlanNewShapesOptions(2));
  auto program = ProgramOf(optimized);
  ASSERT_EQ(program->num_plans(), 1u);
  ExpectSameOutputs(optimized, original, 2, 16);  // the example's shape: its own plan
  EXPECT_EQ(program->num_plans(), 1u);
  ExpectSameOutputs(optimized, original, 4, 24);
  ASSERT_EQ(program->num_plans(), 2u);
  EXPECT_EQ(program->PlanFor({torch::zeros({4, 4, 24, 24})}), 1u);
  ExpectSameOutputs(optimized, original, 4, 24);  // planned once
  EXPECT_EQ(program->num_plans(), 2u);
  ExpectSameOutputs(optimized, original, 1, 8);
  EXPECT_EQ(program->num_plans(), 3u);
  ExpectSameOutputs(optimized, original, 3, 12);  // beyond the limit: the nearest plan runs it
  EXPECT_EQ(program->num_plans(), 3u);

  // Saved, the plans made at call time stay, and so does the setting (a limit per process).
  std::stringstream saved;
  optimized.save(saved);
  torch::jit::Module loaded = torch::jit::load(saved);
  auto reloaded = ProgramOf(loaded);
  ASSERT_EQ(reloaded->num_plans(), 3u);
  EXPECT_EQ(reloaded->PlanFor({torch::zeros({1, 4, 8, 8})}), 2u);
  ExpectSameOutputs(loaded, original, 3, 12);
  EXPECT_EQ(reloaded->num_plans(), 4u);
}

TEST(OptimizeShapes, CallsFromManyThreadsPlanEachNewShapeOnce) {
  torch::jit::Module original = BranchyModule();
  torch::jit::Module optimized = autograph::optimize(original, PlanNewShapesOptions(2));
  std::vector<std::thread> threads;
  std::atomic<int> wrong{0};
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      torch::NoGradGuard no_grad;
      for (int round = 0; round < 3; ++round) {
        for (int64_t size : {8, 12, 20}) {
          const at::Tensor x = torch::randn({1 + t % 2, 4, size, size});
          const at::Tensor got = Flatten({optimized.forward({x})})[0];
          const at::Tensor want = Flatten({original.forward({x})})[0];
          if ((got - want).abs().max().item<double>() > 1e-5 * want.abs().max().item<double>() + 1e-6) ++wrong;
        }
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(wrong.load(), 0);
  EXPECT_EQ(ProgramOf(optimized)->num_plans(), 3u);  // the example's and two made at call time
}

TEST(OptimizeShapes, WithoutAPlannerNewShapesRunTheNearestPlan) {
  torch::jit::Module original = BranchyModule();
  torch::jit::Module optimized = autograph::optimize(original, PlanNewShapesOptions(4));
  // What a process that loaded the runtime library alone sees; the planner is back afterwards.
  struct Restore {
    ~Restore() { autograph::SetShapePlanner(&autograph::PlanNewShape); }
  } restore;
  autograph::SetShapePlanner(nullptr);
  ExpectSameOutputs(optimized, original, 4, 24);
  EXPECT_EQ(ProgramOf(optimized)->num_plans(), 1u);
}

TEST(OptimizeShapes, PlanNewShapesIsBounded) {
  autograph::OptimizeOptions options;
  options.plan_new_shapes = 65;
  EXPECT_THROW(autograph::CheckOptimizeOptions(options), autograph::InputError);
  options.plan_new_shapes = -1;
  EXPECT_THROW(autograph::CheckOptimizeOptions(options), autograph::InputError);
}

}  // namespace
