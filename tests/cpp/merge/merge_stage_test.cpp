// Merge stages in the executor: sibling convolutions run as one merged kernel and give the
// sequential outputs (a small model with several kinds of readers, and Inception-v3), a Program
// with a Merge stage saves and loads (its merged weights rebuilt, not pickled), and ValidateSchedule
// rejects Merge stages that cannot be one kernel.
#include <gtest/gtest.h>
#include <torch/script.h>
#include <torch/torch.h>

#include <filesystem>

#include "autograph/error.h"
#include "autograph/model_loading.h"
#include "autograph/optimize.h"
#include "executor/program.h"
#include "core/schedule.h"
#include "executor/validate_schedule.h"
#include "executor/sequential_executor.h"
#include "executor/stage_executor.h"
#include "graph_pass/import_op_graph.h"
#include "graph_pass/lower_module.h"
#include "merge/merged_convolution.h"
#include "merge_schedule_util.h"
#include "search/simple_schedulers.h"
#include "zoo_test_util.h"

namespace {

using autograph::CanMergeConvolutions;
using autograph::MergeableConvolutionClasses;
using autograph::OpGraph;
using autograph::Schedule;
using autograph::Stage;
using autograph::StageStrategy;
using autograph::testing::Flatten;
using autograph::testing::ScheduleWithMergeStages;
using Classes = std::vector<std::vector<int>>;

bool Contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// ReLU, then four sibling convolutions of one input (1x1 with bias, 3x3 with bias, 1x7 and 7x1),
// and a stride-2 one that does not fit them. Their readers: an in-place relu_ (on a slice), a view
// (which needs the layout of a fresh tensor), a cat, and the graph's return.
torch::jit::Module SiblingConvs() {
  torch::manual_seed(3);
  torch::jit::Module m("__torch__.SiblingConvs");
  m.register_attribute("training", c10::BoolType::get(), false);
  m.register_parameter("w1", torch::randn({4, 3, 1, 1}), false);
  m.register_parameter("b1", torch::randn({4}), false);
  m.register_parameter("w3", torch::randn({5, 3, 3, 3}), false);
  m.register_parameter("b3", torch::randn({5}), false);
  m.register_parameter("w17", torch::randn({6, 3, 1, 7}), false);
  m.register_parameter("w71", torch::randn({6, 3, 7, 1}), false);
  m.register_parameter("w3s", torch::randn({2, 3, 3, 3}), false);
  m.define(R"(
def forward(self, x):
    y = torch.relu(x)
    a = torch.conv2d(y, self.w1, self.b1)
    b = torch.conv2d(y, self.w3, self.b3, 1, 1)
    c = torch.conv2d(y, self.w17, None, 1, [0, 3])
    d = torch.conv2d(y, self.w71, None, 1, [3, 0])
    e = torch.conv2d(y, self.w3s, None, 2, 1)
    a.relu_()
    flat = b.view(b.size(0), -1)
    return torch.cat([a, c, d], 1), flat, e, c
)");
  m.eval();
  return m;
}

// The convolutions differ from separate ones by summation order only (see merged_convolution_test.cpp);
// ReLU and cat keep each element's error, so every output stays within the bound for a reduction of
// 3*7*7 + 1 products of magnitude O(1): |error| <= 1e-4 * max|reference| holds with a wide margin.
void ExpectClose(const std::vector<at::Tensor>& got, const std::vector<at::Tensor>& want, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i) {
    ASSERT_EQ(got[i].sizes(), want[i].sizes()) << what << " output " << i;
    const double scale = want[i].abs().max().item<double>();
    EXPECT_LE((got[i] - want[i]).abs().max().item<double>(), 1e-4 * scale) << what << " output " << i;
  }
}

TEST(MergeStage, SiblingConvolutionsRunAsOneKernel) {
  torch::NoGradGuard no_grad;
  torch::jit::Module module = SiblingConvs();
  for (int64_t batch : {1, 3}) {
    std::vector<c10::IValue> inputs = {torch::randn({batch, 3, 12, 10})};
    OpGraph graph = autograph::ImportOpGraph(autograph::LowerModule(module), inputs);
    const Classes classes = MergeableConvolutionClasses(graph);
    ASSERT_EQ(classes.size(), 1u);
    ASSERT_EQ(classes[0].size(), 4u);
    auto reference = Flatten(autograph::SequentialExecutor(graph).Run(inputs));
    for (int max_groups : {1, 3}) {  // merge stages between sequential stages, and between concurrent ones
      Schedule schedule = ScheduleWithMergeStages(graph, classes, max_groups);
      autograph::ValidateSchedule(schedule, graph);
      autograph::StageExecutor executor(graph, schedule);
      const auto& plan = executor.plan();
      ASSERT_EQ(plan.merged.size(), 1u);
      // a (relu_, cat) and d (cat) stay views; b (view) and c (returned) get their own memory.
      EXPECT_EQ(plan.merged[0].contiguous, (std::vector<bool>{false, true, true, false}));
      int kernels = 0;
      for (const auto& n : graph.nodes()) kernels += n.kind != autograph::OpKind::View;
      EXPECT_EQ(autograph::KernelsLaunched(graph, autograph::SequentialSchedule(graph)), kernels);
      EXPECT_EQ(autograph::KernelsLaunched(graph, schedule), kernels - 3);  // four convolutions, one kernel
      const std::string what = "batch " + std::to_string(batch) + " max_groups " + std::to_string(max_groups);
      for (int repeat = 0; repeat < 2; ++repeat) ExpectClose(Flatten(executor.Run(inputs)), reference, what);
      // The output returned twice (c: in the cat and alone) is a tensor of its own.
      auto outputs = Flatten(executor.Run(inputs));
      EXPECT_TRUE(outputs[3].is_contiguous()) << what;
    }
  }
}

TEST(MergeStage, ProgramRebuildsMergedWeightsAfterLoading) {
  torch::NoGradGuard no_grad;
  torch::jit::Module module = SiblingConvs();
  at::Tensor x = torch::randn({2, 3, 12, 10});
  OpGraph graph = autograph::ImportOpGraph(autograph::LowerModule(module), {x});
  Schedule schedule = ScheduleWithMergeStages(graph, MergeableConvolutionClasses(graph), 2);
  auto program = c10::make_intrusive<autograph::Program>(graph, schedule,
                                                         std::vector<autograph::InputSignature>{{{2, 3, 12, 10}}},
                                                         autograph::ExecutorOptions{});
  const std::vector<at::Tensor> before = program->Run({x});

  // The pickled state holds the graph's own constants only: the merged weight is not among them.
  auto state = program->ToState();
  for (const at::Tensor& t : std::get<2>(state)) EXPECT_NE(t.size(0), 4 + 5 + 6 + 6) << "a merged weight was pickled";
  auto loaded = autograph::Program::FromState(state);
  EXPECT_EQ(loaded->schedule().stages.size(), schedule.stages.size());
  const std::vector<at::Tensor> after = loaded->Run({x});
  ASSERT_EQ(after.size(), before.size());
  for (size_t i = 0; i < after.size(); ++i) EXPECT_TRUE(torch::equal(after[i], before[i])) << "output " << i;

  // Through a saved and loaded TorchScript module: optimize() gives the wrapper, whose program is
  // swapped for the one with the merge stage.
  autograph::OptimizeOptions options;
  options.example_inputs = {x};
  torch::jit::Module optimized = autograph::optimize(module, options);
  optimized.setattr("program", c10::IValue(program));
  auto path = (std::filesystem::temp_directory_path() / "autograph_merge_stage.pt").string();
  optimized.save(path);
  torch::jit::Module reloaded = torch::jit::load(path);
  std::filesystem::remove(path);
  auto outputs = Flatten({reloaded.forward({x})});
  ASSERT_EQ(outputs.size(), before.size());
  for (size_t i = 0; i < outputs.size(); ++i) EXPECT_TRUE(torch::equal(outputs[i], before[i])) << "output " << i;
}

TEST(MergeStage, ValidateScheduleRejectsBadMergeStages) {
  torch::jit::Module module = SiblingConvs();
  OpGraph graph = autograph::ImportOpGraph(autograph::LowerModule(module), {torch::randn({1, 3, 12, 10})});
  const Classes classes = MergeableConvolutionClasses(graph);
  ASSERT_EQ(classes.size(), 1u);
  Schedule good = ScheduleWithMergeStages(graph, classes);
  size_t merge_stage = 0;
  while (good.stages[merge_stage].strategy != StageStrategy::Merge) ++merge_stage;
  auto error = [&](const Schedule& s) {
    try {
      autograph::ValidateSchedule(s, graph);
    } catch (const autograph::ScheduleError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_EQ(error(good), "");
  const std::string stage = "merge stage " + std::to_string(merge_stage);

  // The stride-2 convolution swapped in for the 7x1 one.
  int stride2 = -1;
  for (const auto& n : graph.nodes())
    if (n.kind == autograph::OpKind::ComputeBound && !std::count(classes[0].begin(), classes[0].end(), n.id)) stride2 = n.id;
  ASSERT_GE(stride2, 0);
  Schedule other = good;
  int dropped = other.stages[merge_stage].groups.back()[0];
  other.stages[merge_stage].groups.back() = {stride2};
  for (size_t s = 0; s < other.stages.size(); ++s) {
    if (s == merge_stage) continue;
    for (auto& g : other.stages[s].groups)
      for (int& op : g)
        if (op == stride2) op = dropped;
  }
  std::string msg = error(other);
  EXPECT_TRUE(Contains(msg, stage + " cannot run as one kernel") && Contains(msg, "op " + std::to_string(stride2)) &&
              Contains(msg, "stride [2, 2]")) << msg;

  Schedule two_in_a_group = good;
  auto& groups = two_in_a_group.stages[merge_stage].groups;
  groups[0].push_back(groups.back()[0]);
  groups.pop_back();
  msg = error(two_in_a_group);
  EXPECT_TRUE(Contains(msg, stage + " group 0 lists 2 ops") && Contains(msg, "exactly one convolution")) << msg;

  Schedule one_group = good;
  auto& only = one_group.stages[merge_stage];
  std::vector<std::vector<int>> rest(only.groups.begin() + 1, only.groups.end());
  only.groups.resize(1);
  one_group.stages.insert(one_group.stages.begin() + merge_stage + 1, Stage{StageStrategy::Concurrent, rest});
  msg = error(one_group);
  EXPECT_TRUE(Contains(msg, stage + " has 1 group")) << msg;
}

// --- Inception-v3 -------------------------------------------------------------------------------------

// Inception-v3's blocks start with sibling 1x1 convolutions on the block input (3 per block in
// Mixed_5b-d, 6b-e, 7b-c; 2 in 7a), and 7b/7c also split 1x3 + 3x1 pairs: 14 classes. Every class
// as a Merge stage reproduces the sequential run; so does the Program after a save/load round trip.
TEST(MergeStage, InceptionV3SiblingConvolutions) {
  torch::NoGradGuard no_grad;
  torch::jit::Module module = autograph::LoadModule(autograph::testing::ZooModel("inception_v3"));
  std::vector<c10::IValue> inputs = {torch::randn({1, 3, 299, 299})};
  std::vector<c10::IValue> returned;
  OpGraph graph = autograph::ImportOpGraph(autograph::LowerModule(module), inputs, &returned);
  const Classes classes = MergeableConvolutionClasses(graph);
  EXPECT_EQ(classes.size(), 14u);
  int pairs = 0, triples = 0;
  for (const auto& c : classes) {
    pairs += c.size() == 2;
    triples += c.size() == 3;
    std::string why;
    EXPECT_TRUE(CanMergeConvolutions(graph, c, &why)) << why;
  }
  EXPECT_EQ(pairs, 5);    // Mixed_7a's 1x1s, and the 1x3 + 3x1 pairs of 7b and 7c
  EXPECT_EQ(triples, 9);  // the 1x1s of 5b-d, 6b-e, 7b-c
  auto reference = Flatten(returned);  // the import's own sequential run

  Schedule schedule = ScheduleWithMergeStages(graph, classes, 4);
  autograph::StageExecutor executor(graph, schedule);
  EXPECT_EQ(executor.plan().merged.size(), 14u);
  // Lowering already folded batch norms; merging changes only summation order in 14 convolutions,
  // whose float32 rounding the following layers carry to the logits: 1e-4 * max|reference|.
  ExpectClose(Flatten(executor.Run(inputs)), reference, "inception_v3");

  autograph::Program program(graph, schedule, {{{1, 3, 299, 299}}}, autograph::ExecutorOptions{});
  auto loaded = autograph::Program::FromState(program.ToState());
  ExpectClose(loaded->Run({inputs[0].toTensor()}), reference, "inception_v3 after loading");
}

}  // namespace
