// StageExecutor and Program on the CPU backend: random valid schedules reproduce the sequential
// executor on every zoo model; optimized modules save, load, run from many threads and reject bad
// inputs with clear errors.
#include "executor/stage_executor.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <torch/script.h>
#include <torch/torch.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <thread>

#include "autograph/error.h"
#include "autograph/model_loading.h"
#include "autograph/optimize.h"
#include "executor/program.h"
#include "executor/sequential_executor.h"
#include "graph_pass/import_op_graph.h"
#include "graph_pass/lower_module.h"
#include "search/simple_schedulers.h"
#include "zoo_test_util.h"

namespace {

using autograph::testing::Flatten;
using autograph::testing::ZooModel;

struct ExecutorCase {
  std::string name;
  std::vector<int64_t> shape;  // smaller than the zoo's where the full size is slow on 2 CPU cores
  int random_schedules = 6;
};
std::ostream& operator<<(std::ostream& os, const ExecutorCase& c) { return os << c.name; }

class RandomSchedules : public ::testing::TestWithParam<ExecutorCase> {};

// Every operator computes the same function of the same inputs whatever the schedule, so outputs must
// equal the sequential executor's up to the float reassociation of other intra-op thread counts (below).
TEST_P(RandomSchedules, EqualSequentialExecution) {
  const ExecutorCase& c = GetParam();
  torch::NoGradGuard no_grad;
  const std::string path = ZooModel(c.name);
  auto specs = autograph::ReadInputSpecs(*autograph::InputSpecPathFor(path));
  specs[0].shape = c.shape;
  auto inputs = autograph::MakeExampleInputs(specs);
  autograph::OpGraph graph = autograph::ImportOpGraph(autograph::LowerModule(autograph::LoadModule(path)), inputs);
  auto reference = Flatten(autograph::SequentialExecutor(graph).Run(inputs));

  std::vector<autograph::Schedule> schedules = {autograph::GreedySchedule(graph, 8), autograph::GreedySchedule(graph, 2)};
  for (uint64_t seed = 1; seed <= static_cast<uint64_t>(c.random_schedules); ++seed) schedules.push_back(autograph::RandomSchedule(graph, seed, 1 + seed % 8));
  for (size_t k = 0; k < schedules.size(); ++k) {
    autograph::StageExecutor executor(graph, schedules[k]);
    auto outputs = Flatten(executor.Run(inputs));
    ASSERT_EQ(outputs.size(), reference.size());
    // Concurrent CPU groups run with a share of the intra-op threads, which changes how oneDNN and
    // ATen split their reductions: float reassociation, ~1e-6 relative per layer. 1e-4 of the
    // output's scale bounds that over a model's depth and still catches a wrong or missing operator.
    for (size_t i = 0; i < outputs.size(); ++i) {
      const double scale = std::max(1.0, reference[i].abs().max().item<double>());
      const double err = (outputs[i] - reference[i]).abs().max().item<double>();
      EXPECT_LE(err, 1e-4 * scale) << "schedule " << k << " output " << i;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    Zoo, RandomSchedules,
    ::testing::Values(ExecutorCase{"inception_v3", {1, 3, 160, 160}}, ExecutorCase{"resnet50", {1, 3, 96, 96}},
                      ExecutorCase{"resnext50_32x4d", {1, 3, 96, 96}}, ExecutorCase{"squeezenet", {1, 3, 128, 128}},
                      // NASNet's last pooling window is fixed (11 and 7): these are the smallest inputs it accepts.
                      ExecutorCase{"nasnet_a_large", {1, 3, 331, 331}, 2}, ExecutorCase{"nasnet_a_mobile", {1, 3, 224, 224}, 4},
                      ExecutorCase{"randwire", {1, 3, 96, 96}}, ExecutorCase{"rnntc_sru", {1, 20}},
                      ExecutorCase{"bert_base", {1, 32}}),
    [](const ::testing::TestParamInfo<ExecutorCase>& info) { return info.param.name; });

class OptimizedModule : public ::testing::Test {
 protected:
  void SetUp() override {
    torch::NoGradGuard no_grad;
    module_ = autograph::LoadModule(ZooModel("squeezenet"));
    module_.eval();
    x_ = torch::randn({1, 3, 96, 96});
    autograph::OptimizeOptions options;
    options.example_inputs = {x_};
    options.search.method = "greedy";
    optimized_ = autograph::optimize(module_, options, &report_);
    reference_ = module_.forward({x_}).toTensor();
  }
  // Lowering folds batch norms (none in SqueezeNet) and otherwise runs the same kernels: the
  // optimized module must match the original to float32 rounding, |error| <= 1e-5 * max|ref|.
  void ExpectMatches(const at::Tensor& got, const at::Tensor& want) {
    ASSERT_EQ(got.sizes(), want.sizes());
    EXPECT_LE((got - want).abs().max().item<double>(), 1e-5 * want.abs().max().item<double>() + 1e-6);
  }

  torch::jit::Module module_, optimized_;
  at::Tensor x_, reference_;
  autograph::OptimizeReport report_;
};

TEST_F(OptimizedModule, RunsAScheduleWithParallelStages) {
  EXPECT_EQ(report_.streams, 2);  // expand 1x1 and expand 3x3 side by side
  EXPECT_LT(report_.stages, report_.operators_before);
  torch::NoGradGuard no_grad;
  ExpectMatches(optimized_.forward({x_}).toTensor(), reference_);
}

TEST_F(OptimizedModule, SavesAndLoadsBack) {
  torch::NoGradGuard no_grad;
  auto path = (std::filesystem::temp_directory_path() / "autograph_optimized_squeezenet.pt").string();
  optimized_.save(path);
  torch::jit::Module loaded = torch::jit::load(path);
  at::Tensor before = optimized_.forward({x_}).toTensor();
  EXPECT_TRUE(torch::equal(loaded.forward({x_}).toTensor(), before));
}

TEST_F(OptimizedModule, EightThreadsAtOnce) {
  std::vector<at::Tensor> inputs, outputs(8), expected;
  for (int t = 0; t < 8; ++t) {
    inputs.push_back(torch::randn({1, 3, 96, 96}));
    torch::NoGradGuard no_grad;
    expected.push_back(module_.forward({inputs[t]}).toTensor());
  }
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      torch::NoGradGuard no_grad;
      for (int r = 0; r < 3; ++r) outputs[t] = optimized_.forward({inputs[t]}).toTensor();
    });
  }
  for (auto& th : threads) th.join();
  for (int t = 0; t < 8; ++t) ExpectMatches(outputs[t], expected[t]);
}

TEST_F(OptimizedModule, OtherBatchAndSpatialSizesRun) {
  torch::NoGradGuard no_grad;
  for (auto shape : {std::vector<int64_t>{3, 3, 96, 96}, std::vector<int64_t>{1, 3, 128, 112}}) {
    at::Tensor x = torch::randn(shape);
    ExpectMatches(optimized_.forward({x}).toTensor(), module_.forward({x}).toTensor());
  }
}

std::string ErrorOf(torch::jit::Module& m, std::vector<c10::IValue> inputs) {
  try {
    m.forward(std::move(inputs));
  } catch (const std::exception& e) {  // the interpreter rethrows the op's error with a traceback
    return e.what();
  }
  return "no error";
}

TEST_F(OptimizedModule, BadInputsAreClearErrors) {
  EXPECT_NE(ErrorOf(optimized_, {torch::randn({3, 96, 96})}).find("rank 3"), std::string::npos);
  EXPECT_NE(ErrorOf(optimized_, {torch::randn({1, 3, 96, 96}, torch::kDouble)}).find("dtype"), std::string::npos);
  EXPECT_NE(ErrorOf(optimized_, {torch::empty({1, 3, 96, 96}, torch::Device("meta"))}).find("is on meta"),
            std::string::npos);
  // Too many inputs: TorchScript's own argument check, before autograph runs.
  EXPECT_NE(ErrorOf(optimized_, {x_, x_}).find("argument"), std::string::npos);
}

TEST_F(OptimizedModule, CorruptedOrForeignStateIsRejected) {
  auto program = optimized_.attr("program").toCustomClass<autograph::Program>();
  auto state = program->ToState();
  auto expect_error = [](autograph::Program::State s, const std::string& needle) {
    try {
      autograph::Program::FromState(std::move(s));
      ADD_FAILURE() << "accepted a bad state, expected: " << needle;
    } catch (const autograph::Error& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  };
  auto other_version = state;
  std::get<0>(other_version) = autograph::Program::kFormatVersion + 1;
  expect_error(other_version, "format version");
  auto bad_ir = state;
  std::get<1>(bad_ir) = "graph(%x : Tensor):\n  %y : Tensor = aten::relu(%z)\n  return (%y)";
  expect_error(bad_ir, "corrupted program");
  auto missing_constant = state;
  std::get<2>(missing_constant).pop_back();
  expect_error(missing_constant, "corrupted program");
  // Found by fuzz_program_state: an operator TorchScript does not know, in a graph that parses, made
  // its schema lookup throw past FromState (torch::jit::ErrorReport is no c10::Error).
  auto unknown_operator = state;
  const size_t constant = std::get<1>(unknown_operator).find("prim::Constant[value=");
  ASSERT_NE(constant, std::string::npos);
  std::get<1>(unknown_operator).replace(constant, 14, "prim::Constaft");
  expect_error(unknown_operator, "corrupted program");
  // Found by fuzz_program_state: an edge id written as a huge float was converted to int (undefined).
  auto float_index = state;
  auto float_plan = nlohmann::json::parse(std::get<3>(state));
  float_plan["edges"][0][0] = 5e67;
  std::get<3>(float_index) = float_plan.dump();
  expect_error(float_index, "where the plan has an integer");
  auto bad_json = state;
  std::get<3>(bad_json) = "{\"operators\": 3}";
  expect_error(bad_json, "corrupted program");
  auto bad_schedule = state;
  auto plan = nlohmann::json::parse(std::get<3>(state));
  plan["schedule"]["stages"].erase(0);  // drops operators: the schedule no longer covers the graph
  std::get<3>(bad_schedule) = plan.dump();
  expect_error(bad_schedule, "");
  EXPECT_NO_THROW(autograph::Program::FromState(state));
}

TEST_F(OptimizedModule, MaxCudaGraphsIsSavedAndOlderStatesGetTheDefault) {
  auto program = optimized_.attr("program").toCustomClass<autograph::Program>();
  auto state = program->ToState();
  auto with = [&](const std::function<void(nlohmann::json&)>& change) {
    auto s = state;
    auto plan = nlohmann::json::parse(std::get<3>(s));
    change(plan);
    std::get<3>(s) = plan.dump();
    return autograph::Program::FromState(std::move(s));
  };
  EXPECT_EQ(with([](nlohmann::json& p) { p["max_cuda_graphs"] = 5; })->options().max_cuda_graphs, 5);
  EXPECT_EQ(with([](nlohmann::json& p) { p.erase("max_cuda_graphs"); })->options().max_cuda_graphs,
            autograph::ExecutorOptions{}.max_cuda_graphs);
  EXPECT_THROW(with([](nlohmann::json& p) { p["max_cuda_graphs"] = 0; }), autograph::Error);
  EXPECT_THROW(with([](nlohmann::json& p) { p["max_cuda_graphs"] = "many"; }), autograph::Error);
}

TEST(Optimize, RejectsMissingExamplesAndUnknownMethods) {
  torch::jit::Module m = autograph::LoadModule(ZooModel("squeezenet"));
  autograph::OptimizeOptions options;
  EXPECT_THROW(autograph::optimize(m, options), autograph::InputError);
  options.example_inputs = {torch::randn({1, 3, 64, 64})};
  options.search.method = "magic";
  EXPECT_THROW(autograph::optimize(m, options), autograph::Error);
}

}  // namespace

namespace {

// IOS block by block under the analytical H100 model: a valid schedule that keeps the outputs.
TEST(Optimize, IosMethodPlansBlockByBlock) {
  torch::NoGradGuard no_grad;
  torch::jit::Module m = autograph::LoadModule(ZooModel("inception_v3"));
  m.eval();
  at::Tensor x = torch::randn({1, 3, 160, 160});
  autograph::OptimizeOptions options;
  options.example_inputs = {x};
  options.search.method = "ios";
  options.cost.device_model = "h100";
  options.search.ios_block = 16;
  options.search.ios_r = 2;
  options.search.ios_s = 4;
  autograph::OptimizeReport report;
  torch::jit::Module optimized = autograph::optimize(m, options, &report);
  EXPECT_GT(report.predicted_ms, 0);
  EXPECT_GT(report.states_explored, 0);
  EXPECT_GT(report.streams, 1) << "Inception's branches pay off under the H100 model";
  for (const auto& stage : report.schedule.stages) {
    EXPECT_LE(stage.groups.size(), 4u);
    for (const auto& group : stage.groups) EXPECT_LE(group.size(), 2u);
  }
  at::Tensor want = m.forward({x}).toTensor();
  at::Tensor got = optimized.forward({x}).toTensor();
  // Lowering folds batch norms: float32 rounding, |error| <= 1e-4 * max|reference|.
  EXPECT_LE((got - want).abs().max().item<double>(), 1e-4 * want.abs().max().item<double>());
  options.search.ios_block = 65;
  EXPECT_THROW(autograph::optimize(m, options), autograph::Error);
}

}  // namespace
