// On-board verification keeps the schedule that measures fastest on the device, whichever the search
// preferred: a concurrent schedule that runs slower than one stream loses to it, and the reverse.
// The two branches are test operators whose run time is known and independent of the machine's load:
// sleeping ones (concurrency halves the time) and ones that slow down while another instance runs
// (concurrency more than doubles it).
#include <gtest/gtest.h>
#include <torch/csrc/jit/ir/irparser.h>
#include <torch/library.h>
#include <torch/script.h>
#include <torch/torch.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <thread>

#include "autograph/optimize.h"
#include "graph_pass/import_op_graph.h"
#include "measure/fastest_schedule.h"
#include "search/simple_schedulers.h"
#include "small_test_modules.h"

namespace {

using autograph::CandidateTiming;
using autograph::OpGraph;
using autograph::Schedule;
using autograph::ScheduleCandidate;
using Clock = std::chrono::steady_clock;

at::Tensor SleepMs(const at::Tensor& x, int64_t ms) {
  std::this_thread::sleep_for(std::chrono::milliseconds(ms));
  return x + 1;
}

// Takes `ms` alone, 5 x `ms` when another instance runs at the same time (it watches for one during
// its first fifth).
std::atomic<int> active{0};
at::Tensor ContendedSleepMs(const at::Tensor& x, int64_t ms) {
  bool contended = ++active > 1;
  const auto watch_until = Clock::now() + std::chrono::microseconds(ms * 200);
  while (Clock::now() < watch_until) {
    contended |= active.load() > 1;
    std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
  std::this_thread::sleep_for(std::chrono::microseconds(contended ? ms * 4800 : ms * 800));
  --active;
  return x + 1;
}

TORCH_LIBRARY_FRAGMENT(autograph_test, m) {
  m.def("sleep_ms(Tensor x, int ms) -> Tensor", SleepMs);
  m.def("contended_sleep_ms(Tensor x, int ms) -> Tensor", ContendedSleepMs);
}

struct TwoBranches {
  OpGraph graph;
  std::vector<c10::IValue> inputs;
};

// Two branches of `op` on one input, joined by a multiply.
TwoBranches MakeTwoBranches(const std::string& op, int ms) {
  auto graph = std::make_shared<torch::jit::Graph>();
  torch::jit::parseIR(R"IR(
graph(%x : Tensor):
  %ms : int = prim::Constant[value=)IR" + std::to_string(ms) + R"IR(]()
  %a : Tensor = autograph_test::)IR" + op + R"IR((%x, %ms)
  %b : Tensor = autograph_test::)IR" + op + R"IR((%x, %ms)
  %c : Tensor = aten::mul(%a, %b)
  return (%c)
)IR",
                      graph.get());
  std::vector<c10::IValue> inputs = {torch::randn({4, 4})};
  return TwoBranches{autograph::ImportOpGraph(graph, inputs), inputs};
}

// The one-stream schedule and a schedule that runs the two branches as two groups of one stage.
std::vector<ScheduleCandidate> Candidates(const OpGraph& graph) {
  Schedule concurrent = autograph::GreedySchedule(graph, 2);
  const bool has_two_groups = std::any_of(concurrent.stages.begin(), concurrent.stages.end(),
                                          [](const autograph::Stage& s) { return s.groups.size() == 2; });
  EXPECT_TRUE(has_two_groups) << "the greedy schedule should run the branches concurrently";
  return {ScheduleCandidate{"concurrent", concurrent, 1.0}, ScheduleCandidate{"sequential", autograph::SequentialSchedule(graph), 2.0}};
}

TEST(FastestSchedule, KeepsOneStreamWhenConcurrencyMeasuresSlower) {
  TwoBranches b = MakeTwoBranches("contended_sleep_ms", 4);  // one stream ~8 ms, concurrent ~20 ms
  std::vector<CandidateTiming> timings;
  const size_t kept = autograph::FastestSchedule(b.graph, Candidates(b.graph), b.inputs, c10::kCPU, {}, &timings);
  ASSERT_EQ(timings.size(), 2u);
  EXPECT_EQ(timings[kept].name, "sequential");
  EXPECT_GT(timings[0].measured_ms, 1.5 * timings[1].measured_ms);
  EXPECT_EQ(timings[0].predicted_ms, 1.0);  // predictions are carried through, not used
}

TEST(FastestSchedule, KeepsConcurrencyWhenItMeasuresFaster) {
  TwoBranches b = MakeTwoBranches("sleep_ms", 10);  // one stream ~20 ms, concurrent ~10 ms
  std::vector<CandidateTiming> timings;
  const size_t kept = autograph::FastestSchedule(b.graph, Candidates(b.graph), b.inputs, c10::kCPU, {}, &timings);
  EXPECT_EQ(timings[kept].name, "concurrent");
  EXPECT_LT(timings[0].measured_ms, 0.75 * timings[1].measured_ms);
  for (const CandidateTiming& t : timings) {
    EXPECT_LE(t.measured_ms, t.median_ms);
    EXPECT_LE(t.median_ms, t.p90_ms);
  }
}

TEST(FastestSchedule, RejectsNoCandidatesAndSchedulesThatDoNotFit) {
  TwoBranches b = MakeTwoBranches("sleep_ms", 1);
  EXPECT_THROW(autograph::FastestSchedule(b.graph, {}, b.inputs, c10::kCPU), autograph::Error);
  Schedule partial = autograph::SequentialSchedule(b.graph);
  partial.stages.back().groups.back().pop_back();
  EXPECT_THROW(autograph::FastestSchedule(b.graph, {ScheduleCandidate{"partial", partial}}, b.inputs, c10::kCPU),
               autograph::ScheduleError);
}

// optimize() with its defaults verifies the search's candidates against the one-stream and Nimble
// schedules and keeps the fastest measured one; each rewrite it tried is kept exactly when it measured
// faster, and the report counts only kept rewrites.
TEST(OptimizeDefaults, KeepTheFastestMeasuredScheduleAndOnlyRewritesThatPay) {
  autograph::OptimizeOptions options;
  options.example_inputs = {autograph::testing::BranchyInput(2)};
  EXPECT_EQ(options.search.method, "autograph");
  autograph::OptimizeReport report;
  torch::jit::Module optimized = autograph::optimize(autograph::testing::BranchyModule(), options, &report);
  ASSERT_GE(report.candidates.size(), 2u);
  bool sequential = false, nimble = false;
  const CandidateTiming* kept = nullptr;
  for (const CandidateTiming& c : report.candidates) {
    sequential |= c.name.find("sequential") != std::string::npos;
    nimble |= c.name.find("nimble") != std::string::npos;
    if (c.name == report.chosen) kept = &c;
  }
  EXPECT_TRUE(sequential);
  EXPECT_TRUE(nimble);
  ASSERT_NE(kept, nullptr) << report.chosen;
  for (const CandidateTiming& c : report.candidates) EXPECT_LE(kept->measured_ms, c.measured_ms) << c.name;
  EXPECT_EQ(report.measured_ms, kept->measured_ms);
  EXPECT_EQ(report.candidates_verified, static_cast<int>(report.candidates.size()));

  ASSERT_FALSE(report.rewrites.empty());
  int stitched = 0;
  for (const autograph::RewriteDecision& r : report.rewrites) {
    if (r.changes > 0) {
      EXPECT_GE(r.with_ms, 0) << r.name;
      EXPECT_EQ(r.kept, r.with_ms < r.without_ms) << r.name;
    } else {
      EXPECT_FALSE(r.kept) << r.name;
    }
    if (r.name == "stitch" && r.kept) stitched = r.changes;
  }
  EXPECT_EQ(report.stitch_groups, stitched);

  const at::Tensor x = autograph::testing::BranchyInput(2);
  torch::jit::Module original = autograph::testing::BranchyModule();
  const auto expected = original.forward({x}).toTupleRef().elements()[0].toTensor();
  const auto got = optimized.forward({x}).toTupleRef().elements()[0].toTensor();
  // Stitched kernels may reorder float arithmetic: a few ulps of the output's scale.
  EXPECT_TRUE(torch::allclose(got, expected, 1e-5, 1e-5 * expected.abs().max().item<double>()));
}

}  // namespace
