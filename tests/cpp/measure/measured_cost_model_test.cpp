// MeasuredCostModel, its stage signatures and disk cache, TimeSchedule, and the calibration of the
// analytical model, on CPU. Timings on a shared CI machine are noisy: the tests check that numbers
// are sane and that caching and fitting behave, never that one schedule beats another.
#include "measure/measured_cost_model.h"

#include <gtest/gtest.h>
#include <torch/csrc/jit/ir/irparser.h>
#include <torch/script.h>
#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include "autograph/error.h"
#include "autograph/model_loading.h"
#include "graph_pass/import_op_graph.h"
#include "graph_pass/lower_module.h"
#include "measure/calibrate_device_model.h"
#include "measure/extract_stage.h"
#include "measure/record_values.h"
#include "measure/stage_signature.h"
#include "search/cost/analytical_cost_model.h"
#include "search/cost/device_model.h"
#include "search/simple_schedulers.h"
#include "zoo_test_util.h"

namespace {

namespace fs = std::filesystem;
using autograph::DeviceModel;
using autograph::MeasuredCostModel;
using autograph::MeasuredCostOptions;
using autograph::OpGraph;
using autograph::Stage;
using autograph::StageStrategy;
using autograph::testing::ZooModel;

// An OpGraph imported from IR on `inputs`; the inputs are kept beside it for the cost model.
struct Imported {
  OpGraph graph;
  std::vector<c10::IValue> inputs;
};

Imported FromIr(const std::string& ir, std::vector<c10::IValue> inputs) {
  auto graph = std::make_shared<torch::jit::Graph>();
  torch::jit::parseIR(ir, graph.get());
  return Imported{autograph::ImportOpGraph(graph, inputs), std::move(inputs)};
}

Imported Squeezenet(int64_t hw = 32) {  // a small input keeps the tests short
  torch::NoGradGuard no_grad;
  std::vector<c10::IValue> inputs = {torch::randn({1, 3, hw, hw})};
  OpGraph graph =
      autograph::ImportOpGraph(autograph::LowerModule(autograph::LoadModule(ZooModel("squeezenet"))), inputs);
  return Imported{std::move(graph), std::move(inputs)};
}

// Fork-join: relu and sigmoid of x side by side, then their sum.
const char* kForkJoin = R"IR(
graph(%x : Tensor):
  %one : int = prim::Constant[value=1]()
  %a : Tensor = aten::relu(%x)
  %b : Tensor = aten::sigmoid(%x)
  %c : Tensor = aten::add(%a, %b, %one)
  return (%c))IR";

// Two independent matmuls (ops 0 and 1) and their sum.
const char* kTwoMatmuls = R"IR(
graph(%x : Tensor, %w1 : Tensor, %y : Tensor, %w2 : Tensor):
  %one : int = prim::Constant[value=1]()
  %a : Tensor = aten::mm(%x, %w1)
  %b : Tensor = aten::mm(%y, %w2)
  %c : Tensor = aten::add(%a, %b, %one)
  return (%c))IR";

MeasuredCostOptions Quick(std::string cache = "none") {
  MeasuredCostOptions o;
  o.warmup = 1;
  o.repeats = 3;
  o.cache_path = std::move(cache);
  return o;
}

// A fresh directory under the system temp dir, removed at the end of the test. POSIX calls rather
// than std::filesystem::remove_all: libtorch.so exports its own copy of some std::filesystem
// functions, and calling its remove_all from here crashes (torch 2.11 wheels).
void RemoveTree(const std::string& path) {
  if (DIR* dir = opendir(path.c_str())) {
    while (dirent* entry = readdir(dir)) {
      const std::string name = entry->d_name;
      if (name == "." || name == "..") continue;
      const std::string child = path + "/" + name;
      struct stat st;
      if (lstat(child.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) RemoveTree(child);
      else unlink(child.c_str());
    }
    closedir(dir);
  }
  rmdir(path.c_str());
}

class TempDir {
 public:
  TempDir() {
    std::string pattern = (fs::temp_directory_path() / "autograph-measured-test-XXXXXX").string();
    if (!mkdtemp(pattern.data())) throw std::runtime_error("mkdtemp failed for " + pattern);
    path_ = pattern;
  }
  ~TempDir() { RemoveTree(path_); }
  std::string File(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

bool Sane(double ms) { return std::isfinite(ms) && ms > 0 && ms < 10'000; }

TEST(MeasuredCostModel, StageTimesArePositiveAndFinite) {
  Imported g = FromIr(kForkJoin, {torch::randn({64, 64})});
  MeasuredCostModel model(g.graph, g.inputs, Quick());
  EXPECT_EQ(model.name(), "measured:" + model.device_id());
  EXPECT_EQ(model.device_id().rfind("cpu:", 0), 0u) << model.device_id();
  for (int op = 0; op < g.graph.size(); ++op) EXPECT_TRUE(Sane(model.OperatorMs(g.graph, op))) << op;
  EXPECT_TRUE(Sane(model.StageMs(g.graph, Stage{StageStrategy::Concurrent, {{0}, {1}}})));
  EXPECT_TRUE(Sane(model.StageMs(g.graph, Stage{StageStrategy::Concurrent, {{0, 2}}})));  // relu then add: one group
  autograph::Schedule schedule = autograph::GreedySchedule(g.graph, 2);
  EXPECT_TRUE(Sane(model.ScheduleMs(g.graph, schedule)));
  EXPECT_EQ(model.measurements(), 5);  // the greedy schedule's stages were all measured above
  EXPECT_TRUE(model.cache_path().empty());
}

// Don't compare the numbers: on a loaded 2-core machine an OpenMP region whose thread is preempted
// waits a whole time slice, so one matmul can look slower than two. Both must be plausible.
TEST(MeasuredCostModel, ConcurrentAndSequentialMatmulsBothSane) {
  torch::manual_seed(0);
  const int64_t n = 256;
  Imported g =
      FromIr(kTwoMatmuls, {torch::randn({n, n}), torch::randn({n, n}), torch::randn({n, n}), torch::randn({n, n})});
  ASSERT_EQ(g.graph.node(0).op, "aten::mm");
  ASSERT_EQ(g.graph.node(1).op, "aten::mm");
  MeasuredCostModel model(g.graph, g.inputs, Quick());
  const double one = model.OperatorMs(g.graph, 0);
  const double concurrent = model.StageMs(g.graph, Stage{StageStrategy::Concurrent, {{0}, {1}}});
  const double sequential = model.StageMs(g.graph, Stage{StageStrategy::Concurrent, {{0, 1}}});
  EXPECT_TRUE(Sane(one));
  EXPECT_TRUE(Sane(concurrent));
  EXPECT_TRUE(Sane(sequential));
  std::cout << "[ info ] 256^3 matmul " << one << " ms; two concurrent " << concurrent << " ms; two in one group "
            << sequential << " ms\n";
}

TEST(MeasuredCostModel, MemoMeasuresAStageOnce) {
  Imported g = FromIr(kForkJoin, {torch::randn({32, 32})});
  MeasuredCostModel model(g.graph, g.inputs, Quick());
  const Stage stage{StageStrategy::Concurrent, {{0}, {1}}};
  const double first = model.StageMs(g.graph, stage);
  const double second = model.StageMs(g.graph, stage);
  EXPECT_EQ(first, second);
  EXPECT_EQ(model.measurements(), 1);
  EXPECT_EQ(model.cache_hits(), 1);
  // OperatorMs is the one-operator stage: the same entry.
  model.StageMs(g.graph, Stage{StageStrategy::Concurrent, {{2}}});
  model.OperatorMs(g.graph, 2);
  EXPECT_EQ(model.measurements(), 2);
  EXPECT_EQ(model.cache_hits(), 2);
}

// relu(x) of one graph and relu(y) of another, same shape: one entry; another shape: another entry.
TEST(MeasuredCostModel, IdenticalStagesOfDifferentGraphsShareAnEntry) {
  TempDir dir;
  const std::string cache = dir.File("costs.json");
  Imported a = FromIr(kForkJoin, {torch::randn({16, 8})});
  Imported b = FromIr(R"IR(
graph(%input : Tensor):
  %r : Tensor = aten::relu(%input)
  %t : Tensor = aten::tanh(%r)
  return (%t))IR", {torch::randn({16, 8})});
  Imported c = FromIr(kForkJoin, {torch::randn({16, 9})});
  {
    MeasuredCostModel model(a.graph, a.inputs, Quick(cache));
    model.OperatorMs(a.graph, 0);  // relu
  }
  MeasuredCostModel other(b.graph, b.inputs, Quick(cache));
  other.OperatorMs(b.graph, 0);  // relu, same shape
  EXPECT_EQ(other.measurements(), 0);
  EXPECT_EQ(other.cache_hits(), 1);
  other.OperatorMs(b.graph, 1);  // tanh: new
  EXPECT_EQ(other.measurements(), 1);
  MeasuredCostModel third(c.graph, c.inputs, Quick(cache));
  third.OperatorMs(c.graph, 0);  // relu, another shape
  EXPECT_EQ(third.measurements(), 1);
}

TEST(MeasuredCostModel, DiskCacheMakesASecondInstanceMeasureNothing) {
  TempDir dir;
  const std::string cache = dir.File("sub/dir/costs.json");  // directories are created
  auto measure_all = [](MeasuredCostModel& model, const OpGraph& graph) {
    for (int op = 0; op < graph.size(); ++op) model.OperatorMs(graph, op);
    return model.ScheduleMs(graph, autograph::GreedySchedule(graph, 4));
  };
  MeasuredCostOptions once = Quick(cache);  // caching is under test, not timing: one run per stage
  once.warmup = 0;
  once.repeats = 1;
  double first_ms = 0;
  int64_t first_measurements = 0;
  {
    Imported g = Squeezenet();
    MeasuredCostModel model(g.graph, g.inputs, once);
    EXPECT_EQ(model.cache_path(), cache);
    first_ms = measure_all(model, g.graph);
    first_measurements = model.measurements();
    EXPECT_GT(first_measurements, 10);
  }  // the destructor flushes
  nlohmann::json json = nlohmann::json::parse(std::ifstream(cache));
  EXPECT_EQ(json["version"], 1);
  EXPECT_TRUE(json["device"].is_string());
  EXPECT_EQ(static_cast<int64_t>(json["entries"].size()), first_measurements);

  Imported again = Squeezenet();  // a new instance of the same model: another graph, same stages
  MeasuredCostModel model(again.graph, again.inputs, once);
  const double second_ms = measure_all(model, again.graph);
  EXPECT_EQ(model.measurements(), 0);
  EXPECT_GT(model.cache_hits(), 0);
  EXPECT_EQ(first_ms, second_ms);
}

TEST(MeasuredCostModel, CorruptedCacheFileWarnsAndIsRewritten) {
  TempDir dir;
  const std::string cache = dir.File("costs.json");
  std::ofstream(cache) << "{\"version\": 1, \"entries\": {\"abc\": ";  // truncated
  Imported g = FromIr(kForkJoin, {torch::randn({8, 8})});
  ::testing::internal::CaptureStderr();
  MeasuredCostModel model(g.graph, g.inputs, Quick(cache));
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("warning"), std::string::npos) << err;
  EXPECT_NE(err.find(cache), std::string::npos) << err;
  EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << err;
  EXPECT_TRUE(Sane(model.OperatorMs(g.graph, 0)));
  model.Flush();
  nlohmann::json json = nlohmann::json::parse(std::ifstream(cache));
  EXPECT_EQ(json["entries"].size(), 1u);

  // Valid JSON of the wrong form: also a warning, not a crash.
  std::ofstream(cache) << "[1, 2, 3]";
  ::testing::internal::CaptureStderr();
  MeasuredCostModel again(g.graph, g.inputs, Quick(cache));
  EXPECT_NE(::testing::internal::GetCapturedStderr().find("warning"), std::string::npos);
  EXPECT_TRUE(Sane(again.OperatorMs(g.graph, 1)));
}

TEST(MeasuredCostModel, AnotherGraphIsAnError) {
  Imported g = FromIr(kForkJoin, {torch::randn({8, 8})});
  Imported other = FromIr(kForkJoin, {torch::randn({8, 8})});
  MeasuredCostModel model(g.graph, g.inputs, Quick());
  EXPECT_THROW(model.OperatorMs(other.graph, 0), autograph::Error);
  EXPECT_THROW(model.StageMs(other.graph, Stage{StageStrategy::Concurrent, {{0}}}), autograph::Error);
  try {
    model.OperatorMs(other.graph, 0);
  } catch (const autograph::Error& e) {
    EXPECT_NE(std::string(e.what()).find("one MeasuredCostModel per graph"), std::string::npos) << e.what();
  }
}

TEST(MeasuredCostModel, RejectsBadStagesAndOptions) {
  Imported g = FromIr(kForkJoin, {torch::randn({8, 8})});
  MeasuredCostModel model(g.graph, g.inputs, Quick());
  // relu -> add in separate groups of one stage: they cannot run side by side.
  EXPECT_THROW(model.StageMs(g.graph, Stage{StageStrategy::Concurrent, {{0}, {2}}}), autograph::ScheduleError);
  EXPECT_THROW(model.StageMs(g.graph, Stage{StageStrategy::Concurrent, {{2, 0}}}), autograph::ScheduleError);
  EXPECT_THROW(model.StageMs(g.graph, Stage{StageStrategy::Concurrent, {{0}, {0}}}), autograph::ScheduleError);
  EXPECT_THROW(model.StageMs(g.graph, Stage{StageStrategy::Concurrent, {{7}}}), autograph::ScheduleError);
  EXPECT_THROW(model.StageMs(g.graph, Stage{StageStrategy::Concurrent, {}, {}}), autograph::ScheduleError);
  EXPECT_THROW(model.OperatorMs(g.graph, -1), autograph::Error);
  EXPECT_EQ(model.measurements(), 0);

  MeasuredCostOptions bad = Quick();
  bad.repeats = 0;
  EXPECT_THROW(MeasuredCostModel(g.graph, g.inputs, bad), autograph::Error);
  bad = Quick();
  bad.fastest_fraction = 0;
  EXPECT_THROW(MeasuredCostModel(g.graph, g.inputs, bad), autograph::Error);
  EXPECT_THROW(MeasuredCostModel(g.graph, {}, Quick()), autograph::InputError);
}

TEST(MeasuredCostModel, ExtractedStageRunsAloneAndCopiesWhatItWrites) {
  // relu, then an in-place mul_ of relu's output, then a view folded into the mul_ operator.
  Imported g = FromIr(R"IR(
graph(%x : Tensor):
  %two : int = prim::Constant[value=2]()
  %shape : int[] = prim::Constant[value=[-1]]()
  %a : Tensor = aten::relu(%x)
  %b : Tensor = aten::mul_(%a, %two)
  %v : Tensor = aten::view(%b, %shape)
  %s : Tensor = aten::sigmoid(%x)
  return (%v, %s))IR", {torch::randn({4, 4})});
  ASSERT_EQ(g.graph.size(), 3);  // relu, mul_ (+ view), sigmoid
  const autograph::ValueRecord values = autograph::RecordValues(g.graph, g.inputs);
  const int mul = g.graph.node(1).op == "aten::mul_" ? 1 : 2;
  autograph::StageSubgraph sub = autograph::ExtractStage(g.graph, Stage{StageStrategy::Concurrent, {{mul}}}, values);
  ASSERT_EQ(sub.inputs.size(), 1u);
  EXPECT_TRUE(sub.mutated[0]);
  EXPECT_EQ(sub.graph.size(), 1);
  EXPECT_EQ(g.graph.node(mul).jit_nodes.size(), 2u);  // mul_ and its view
  EXPECT_EQ(sub.graph.node(0).jit_nodes.size(), g.graph.node(mul).jit_nodes.size());
  EXPECT_EQ(sub.graph.graph()->outputs().size(), 1u);  // the view, a graph output
  const int relu = 0;
  autograph::StageSubgraph alone = autograph::ExtractStage(g.graph, Stage{StageStrategy::Concurrent, {{relu}}}, values);
  EXPECT_FALSE(alone.mutated[0]);
  Imported other = FromIr(kForkJoin, {torch::randn({4, 4})});  // values of another graph
  EXPECT_THROW(autograph::ExtractStage(g.graph, Stage{StageStrategy::Concurrent, {{relu}}},
                                       autograph::RecordValues(other.graph, other.inputs)),
               autograph::Error);
  // The measured model copies the mutated input: measuring mul_ many times leaves relu's recorded
  // output (read by the next measurement of mul_) unchanged, so the times stay comparable.
  MeasuredCostModel model(g.graph, g.inputs, Quick());
  EXPECT_TRUE(Sane(model.OperatorMs(g.graph, mul)));
}

TEST(MeasuredCostSignature, IgnoresNamesButNotShapesOrScalars) {
  auto signature = [](const std::string& ir, std::vector<c10::IValue> inputs, int op,
                      StageStrategy strategy = StageStrategy::Concurrent) {
    Imported g = FromIr(ir, inputs);
    const autograph::ValueRecord values = autograph::RecordValues(g.graph, inputs);
    return autograph::StageSignature(g.graph, Stage{strategy, {{op}}}, values, "cpu:test");
  };
  const char* pool = R"IR(
graph(%%NAME : Tensor):
  %k : int[] = prim::Constant[value=[3, 3]]()
  %s : int[] = prim::Constant[value=[STRIDE, STRIDE]]()
  %p : int[] = prim::Constant[value=[1, 1]]()
  %d : int[] = prim::Constant[value=[1, 1]]()
  %f : bool = prim::Constant[value=0]()
  %y : Tensor = aten::max_pool2d(%%NAME, %k, %s, %p, %d, %f)
  return (%y))IR";
  auto ir = [&](const std::string& name, int stride) {
    std::string text = pool;
    for (auto [from, to] : {std::pair<std::string, std::string>{"%NAME", name}, {"STRIDE", std::to_string(stride)}})
      for (size_t at; (at = text.find(from)) != std::string::npos;) text.replace(at, from.size(), to);
    return text;
  };
  const std::string base = signature(ir("x", 2), {torch::randn({1, 4, 8, 8})}, 0);
  EXPECT_EQ(base, signature(ir("input_7", 2), {torch::randn({1, 4, 8, 8})}, 0));
  EXPECT_NE(base, signature(ir("x", 1), {torch::randn({1, 4, 8, 8})}, 0));
  EXPECT_NE(base, signature(ir("x", 2), {torch::randn({1, 4, 8, 9})}, 0));
  EXPECT_NE(base, signature(ir("x", 2), {torch::randn({1, 4, 8, 8}, torch::kDouble)}, 0));
  EXPECT_NE(base, signature(ir("x", 2), {torch::randn({1, 8, 8, 4}).permute({0, 3, 1, 2})}, 0));  // strides
  EXPECT_NE(base, signature(ir("x", 2), {torch::randn({1, 4, 8, 8})}, 0, StageStrategy::Merge));
  EXPECT_NE(base.find("aten::max_pool2d"), std::string::npos) << base;
  EXPECT_NE(base.find("[2,2]"), std::string::npos) << base;
  EXPECT_NE(base.find("cpu:test"), std::string::npos) << base;
  EXPECT_EQ(autograph::SignatureHash(base), autograph::SignatureHash(base));
  EXPECT_EQ(autograph::SignatureHash(base).size(), 40u);
}

TEST(MeasuredCostTimeSchedule, MedianAtMostP90) {
  Imported g = Squeezenet();
  const autograph::Schedule schedule = autograph::GreedySchedule(g.graph, 2);
  autograph::ScheduleTiming t = autograph::TimeSchedule(g.graph, schedule, g.inputs, c10::kCPU, false, 1, 10);
  EXPECT_TRUE(Sane(t.robust_ms));
  EXPECT_LE(t.robust_ms, t.median_ms);
  EXPECT_LE(t.median_ms, t.p90_ms);
  std::cout << "[ info ] squeezenet 32x32 greedy(2): robust " << t.robust_ms << " ms, median " << t.median_ms
            << " ms, p90 " << t.p90_ms << " ms\n";
  EXPECT_THROW(autograph::TimeSchedule(g.graph, schedule, g.inputs, c10::kCPU, true, 1, 3), autograph::Error);
  EXPECT_THROW(autograph::TimeSchedule(g.graph, schedule, g.inputs, c10::kCPU, false, 1, 0), autograph::Error);
  autograph::Schedule broken = schedule;
  broken.stages.pop_back();
  EXPECT_THROW(autograph::TimeSchedule(g.graph, broken, g.inputs, c10::kCPU, false, 1, 3), autograph::ScheduleError);
}

TEST(Calibration, FitOnSqueezenetDoesNotIncreaseTheErrorAndIsValid) {
  Imported g = Squeezenet();
  MeasuredCostOptions options = Quick();
  options.repeats = 2;
  MeasuredCostModel measured(g.graph, g.inputs, options);
  const DeviceModel start = DeviceModel::ByName("cpu");
  autograph::CalibrationReport report;
  const DeviceModel fitted = autograph::CalibrateDeviceModel(start, g.graph, measured, &report);
  EXPECT_NO_THROW(autograph::ValidateDeviceModel(fitted));
  EXPECT_EQ(fitted.name, "cpu-calibrated");
  EXPECT_EQ(fitted.sms, start.sms);
  EXPECT_EQ(fitted.fp32_tflops, start.fp32_tflops);
  EXPECT_GT(report.operators, 20);
  EXPECT_LE(report.after.rms, report.before.rms + 1e-12);
  EXPECT_LE(report.after.median, report.after.p90);
  EXPECT_EQ(report.fitted.gemm_efficiency, fitted.gemm_efficiency);
  std::cout << "[ info ] squeezenet 32x32 CPU: " << report.operators << " operators, " << report.measurements
            << " measured in " << report.measure_seconds << " s; |ln ratio| median " << report.before.median << " -> "
            << report.after.median << ", p90 " << report.before.p90 << " -> " << report.after.p90 << ", rms "
            << report.before.rms << " -> " << report.after.rms << "; gemm " << fitted.gemm_efficiency << " vector "
            << fitted.vector_efficiency << " memory " << fitted.memory_efficiency << " launch_us "
            << fitted.launch_us << " sm_bw " << fitted.sm_bandwidth_share << "\n";
  // Calibrating the calibrated model keeps its name.
  EXPECT_EQ(autograph::FitDeviceModel(fitted, report.timings).name, "cpu-calibrated");
}

// Times made by a known device model: the fit should find factors that reproduce them.
TEST(Calibration, FitRecoversSyntheticFactors) {
  Imported g = Squeezenet();
  DeviceModel truth = DeviceModel::ByName("cpu");
  truth.gemm_efficiency = 0.15;
  truth.vector_efficiency = 0.05;
  truth.memory_efficiency = 0.3;
  truth.launch_us = 25;
  autograph::AnalyticalCostModel oracle(truth);
  std::vector<autograph::OperatorTiming> timings;
  for (const auto& node : g.graph.nodes())
    if (node.kind == autograph::OpKind::ComputeBound || node.kind == autograph::OpKind::MemoryBound)
      timings.push_back({&g.graph, node.id, oracle.OperatorMs(g.graph, node.id)});
  autograph::CalibrationReport report;
  const DeviceModel fitted = autograph::FitDeviceModel(DeviceModel::ByName("cpu"), timings, &report);
  EXPECT_GT(report.before.rms, 0.2);
  EXPECT_LT(report.after.rms, 0.05);
  EXPECT_LT(report.after.p90, 0.1);
  EXPECT_NEAR(fitted.launch_us, 25, 5);
  EXPECT_THROW(autograph::FitDeviceModel(truth, {}), autograph::Error);
}

// Concurrent stages timed as a device with a known price per extra group would run them: the fit
// finds that price, and pairs are independent operators of the graph.
TEST(Calibration, StageFitRecoversSyncCostOfConcurrentPairs) {
  Imported g = Squeezenet();
  DeviceModel truth = DeviceModel::ByName("cpu");
  truth.sync_us = 120;
  autograph::AnalyticalCostModel oracle(truth);
  // The pairs MeasureConcurrentPairs picks, timed by the oracle instead of the device.
  struct OracleTimes : MeasuredCostModel {
    OracleTimes(const autograph::OpGraph& graph, const std::vector<c10::IValue>& inputs,
                autograph::AnalyticalCostModel* oracle)
        : MeasuredCostModel(graph, inputs, Quick()), oracle_(oracle) {}
    double StageMs(const autograph::OpGraph& graph, const autograph::Stage& stage) override {
      return oracle_->StageMs(graph, stage);
    }
    autograph::AnalyticalCostModel* oracle_;
  } measured(g.graph, g.inputs, &oracle);
  const std::vector<autograph::StageTiming> pairs = autograph::MeasureConcurrentPairs(g.graph, measured, 8);
  ASSERT_GE(pairs.size(), 4u);  // a fire module's two expand convolutions are independent
  auto reaches = [&](int from, int to) {
    std::vector<int> todo = {from};
    std::vector<bool> seen(g.graph.size(), false);
    while (!todo.empty()) {
      const int x = todo.back();
      todo.pop_back();
      if (x == to) return true;
      for (int s : g.graph.succs(x))
        if (!seen[s]) seen[s] = true, todo.push_back(s);
    }
    return false;
  };
  for (const auto& t : pairs) {
    ASSERT_EQ(t.stage.groups.size(), 2u);
    const int a = t.stage.groups[0][0], b = t.stage.groups[1][0];
    EXPECT_FALSE(reaches(a, b) || reaches(b, a)) << "ops " << a << " and " << b << " depend on each other";
  }
  DeviceModel start = truth;
  start.sync_us = 10;
  autograph::CalibrationReport report;
  const DeviceModel fitted = autograph::FitStageOverheads(start, pairs, &report);
  EXPECT_NEAR(fitted.sync_us, 120, 6);
  EXPECT_EQ(report.stages, static_cast<int>(pairs.size()));
  EXPECT_EQ(report.sync_us_before, 10);
  EXPECT_GT(report.stages_before.rms, report.stages_after.rms);
  EXPECT_LT(report.stages_after.rms, 0.02);
  // Nothing to fit: the model comes back unchanged.
  EXPECT_EQ(autograph::FitStageOverheads(start, {}).sync_us, 10);
}

// Memory-bound operators faster than the DRAM peak (tensors in cache): the fit keeps efficiencies
// in (0, 1] and raises the bandwidth instead.
TEST(Calibration, FitRaisesBandwidthBeyondThePeak) {
  Imported g = Squeezenet(64);
  DeviceModel truth = DeviceModel::ByName("cpu");
  truth.memory_gbps *= 8;
  truth.memory_efficiency = 1;
  autograph::AnalyticalCostModel oracle(truth);
  std::vector<autograph::OperatorTiming> timings;
  for (const auto& node : g.graph.nodes())
    if (node.kind == autograph::OpKind::MemoryBound)
      timings.push_back({&g.graph, node.id, oracle.OperatorMs(g.graph, node.id)});
  const DeviceModel start = DeviceModel::ByName("cpu");
  autograph::CalibrationReport report;
  const DeviceModel fitted = autograph::FitDeviceModel(start, timings, &report);
  EXPECT_NO_THROW(autograph::ValidateDeviceModel(fitted));
  EXPECT_LE(fitted.memory_efficiency, 1.0);
  EXPECT_GT(fitted.memory_gbps, 2 * start.memory_gbps);
  EXPECT_LT(report.after.rms, 0.5 * report.before.rms);
}

TEST(DeviceModelByName, LoadsASavedJsonFile) {
  TempDir dir;
  DeviceModel d = DeviceModel::ByName("a100");
  d.name = "a100-calibrated";
  d.gemm_efficiency = 0.42;
  d.launch_us = 7.5;
  const std::string path = dir.File("a100.json");
  autograph::SaveDeviceModel(d, path);
  const DeviceModel loaded = DeviceModel::ByName(path);
  EXPECT_EQ(loaded.name, "a100-calibrated");
  EXPECT_EQ(loaded.gemm_efficiency, 0.42);
  EXPECT_EQ(loaded.launch_us, 7.5);
  EXPECT_EQ(loaded.sms, 108);
  try {
    DeviceModel::ByName(dir.File("missing.json"));
    FAIL() << "expected autograph::Error";
  } catch (const autograph::Error& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("does not exist"), std::string::npos) << message;
    EXPECT_NE(message.find("autograph calibrate"), std::string::npos) << message;
  }
  std::ofstream(dir.File("bad.json")) << "{\"version\": 1}";
  EXPECT_THROW(DeviceModel::ByName(dir.File("bad.json")), autograph::Error);
}

}  // namespace
