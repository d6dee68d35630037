// The CPU backend divides the caller's intra-op threads among the groups of a concurrent stage, so two
// groups on a 4-thread process run with 2 threads each instead of 4 each, and gives the caller its
// thread count back afterwards.
#include <gtest/gtest.h>
#include <torch/csrc/jit/ir/irparser.h>
#include <torch/library.h>
#include <torch/torch.h>

#include <ATen/Parallel.h>

#include "executor/stage_executor.h"
#include "graph_pass/import_op_graph.h"
#include "search/simple_schedulers.h"

namespace {

// The intra-op thread count the operator ran with.
at::Tensor IntraOpThreads(const at::Tensor& x) { return at::full_like(x, at::get_num_threads()); }

TORCH_LIBRARY_FRAGMENT(autograph_test, m) { m.def("intra_op_threads(Tensor x) -> Tensor", IntraOpThreads); }

// `branches` operators reading one input, their results returned.
std::vector<at::Tensor> RunBranches(int branches, int max_groups) {
  std::string ir = "graph(%x : Tensor):\n";
  std::string outputs;
  for (int i = 0; i < branches; ++i) {
    ir += "  %t" + std::to_string(i) + " : Tensor = autograph_test::intra_op_threads(%x)\n";
    outputs += (i ? ", %t" : "%t") + std::to_string(i);
  }
  ir += "  return (" + outputs + ")\n";
  auto graph = std::make_shared<torch::jit::Graph>();
  torch::jit::parseIR(ir, graph.get());
  std::vector<c10::IValue> inputs = {torch::zeros({2})};
  const autograph::OpGraph op_graph = autograph::ImportOpGraph(graph, inputs);
  const autograph::Schedule schedule = autograph::GreedySchedule(op_graph, max_groups);
  EXPECT_EQ(schedule.stages.size(), 1u);
  EXPECT_EQ(schedule.stages[0].groups.size(), static_cast<size_t>(std::min(branches, max_groups)));
  autograph::StageExecutor executor(op_graph, schedule, autograph::ExecutorOptions{c10::kCPU, false});
  std::vector<at::Tensor> out;
  for (const c10::IValue& v : executor.Run(inputs)) out.push_back(v.toTensor());
  return out;
}

std::vector<int> ThreadCounts(const std::vector<at::Tensor>& outputs) {
  std::vector<int> counts;
  for (const at::Tensor& t : outputs) counts.push_back(static_cast<int>(t[0].item<float>()));
  std::sort(counts.begin(), counts.end());
  return counts;
}

TEST(CpuStageBackend, ConcurrentGroupsShareTheIntraOpThreads) {
  at::set_num_threads(4);  // this process only (one test per process under ctest)
  if (at::get_num_threads() != 4) GTEST_SKIP() << "ATen was built without an intra-op thread pool";
  EXPECT_EQ(ThreadCounts(RunBranches(2, 2)), (std::vector<int>{2, 2}));
  EXPECT_EQ(ThreadCounts(RunBranches(3, 3)), (std::vector<int>{1, 1, 2}));
  EXPECT_EQ(ThreadCounts(RunBranches(6, 6)), (std::vector<int>{1, 1, 1, 1, 1, 1}));  // at least one each
  EXPECT_EQ(ThreadCounts(RunBranches(1, 1)), (std::vector<int>{4}));  // one group: all of them
  EXPECT_EQ(at::get_num_threads(), 4) << "the caller's count must be restored";
}

}  // namespace
