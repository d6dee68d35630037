// Option precision on the TorchScript path (ChoosePrecision, JudgeTwin): tf32 on a CPU lowers nothing
// and the report says why; bf16 plans the graph lowered on a CPU with bf16 instructions, judged and
// reported, and stays fp32 beyond the tolerance; fp16 on a CPU says why nothing was lowered; a twin is
// judged against the program in full float32 (within the tolerance, then timed) and a saved program
// keeps its tf32 switch and its lowered operators.
// The twin's judgement runs on the CPU, where a TF32 twin computes as float32 does (error 0); a twin
// of other weights stands for one whose rounding moved its outputs.
#include <gtest/gtest.h>

#include <torch/script.h>
#include <torch/torch.h>

#include <algorithm>
#include <set>
#include <sstream>

#include "api/choose_precision.h"
#include "autograph/error.h"
#include "core/operator_flops.h"
#include "core/output_error.h"
#include "autograph/optimize.h"
#include "executor/program.h"
#include "small_test_modules.h"

namespace {

using autograph::testing::BranchyInput;
using autograph::testing::BranchyModule;

autograph::OptimizeOptions Options(const std::string& precision) {
  autograph::OptimizeOptions options;
  options.example_inputs = {BranchyInput(2)};
  options.search.method = "greedy";  // quick: what is tested is the precision, not the plan
  options.numerics.precision = precision;
  return options;
}

c10::intrusive_ptr<autograph::Program> ProgramOf(const torch::jit::Module& m) {
  return m.attr("program").toCustomClass<autograph::Program>();
}

std::vector<at::Tensor> Flat(const c10::IValue& outputs) {
  std::vector<at::Tensor> out;
  autograph::CollectTensors(outputs, &out);
  return out;
}

c10::intrusive_ptr<autograph::Program> Twin(const autograph::Program& p) {
  autograph::ExecutorOptions options = p.options();
  options.tf32 = true;
  return c10::make_intrusive<autograph::Program>(p.graph(), p.schedule(), p.inputs(), options);
}

TEST(ChoosePrecision, Tf32OnACpuLowersNothingAndSaysWhy) {
  autograph::OptimizeReport report;
  torch::jit::Module optimized = autograph::optimize(BranchyModule(), Options("tf32"), &report);
  ASSERT_TRUE(report.precision.has_value());
  EXPECT_EQ(report.precision->asked, "tf32");
  EXPECT_EQ(report.precision->kept, "fp32");
  EXPECT_NE(report.precision->note.find("no TF32"), std::string::npos) << report.precision->note;
  EXPECT_FALSE(ProgramOf(optimized)->options().tf32);
}

TEST(ChoosePrecision, Fp32ReportsNothing) {
  autograph::OptimizeReport report;
  autograph::optimize(BranchyModule(), Options("fp32"), &report);
  EXPECT_FALSE(report.precision.has_value());
}

TEST(ChoosePrecision, Fp16OnACpuLowersNothingAndSaysWhy) {
  autograph::OptimizeReport report;
  autograph::optimize(BranchyModule(), Options("fp16"), &report);
  ASSERT_TRUE(report.precision.has_value());
  EXPECT_EQ(report.precision->kept, "fp32");
  EXPECT_NE(report.precision->note.find("fp16 is lowered on CUDA"), std::string::npos) << report.precision->note;
  EXPECT_EQ(report.ops_lowered, 0);
}

// bf16's rounding on BranchyModule's linears: about 2^-8 of the output's scale; 0.1 admits it, 1e-7
// cannot.
TEST(ChoosePrecision, Bf16PlansTheGraphLoweredAndJudgesIt) {
  autograph::OptimizeOptions options = Options("bf16");
  if (!autograph::OffersLoweredPlan(options)) GTEST_SKIP() << "this CPU has no bf16 instructions";
  options.numerics.tolerance = 0.1;
  autograph::OptimizeReport report;
  torch::jit::Module optimized = autograph::optimize(BranchyModule(), options, &report);
  ASSERT_TRUE(report.precision.has_value());
  const autograph::PrecisionDecision& d = *report.precision;
  EXPECT_EQ(d.asked, "bf16");
  EXPECT_GT(d.error, 0.0) << "bf16 rounds";
  EXPECT_LE(d.error, 0.1);
  EXPECT_GT(d.fp32_ms, 0.0);
  EXPECT_EQ(d.kept, d.lowered_ms < 0.98 * d.fp32_ms ? "bf16" : "fp32");
  EXPECT_EQ(report.ops_lowered > 0, d.kept == "bf16") << "the report describes the program kept";
  // Either plan's report lists the pattern rewrites (decided once, before the plans fork) then the
  // others, each once; lower_precision only where the lowered plan was kept.
  std::vector<std::string> steps;
  for (const auto& r : report.rewrites) steps.push_back(r.name);
  ASSERT_GE(steps.size(), 2u);
  EXPECT_EQ(steps.front(), "fuse_attention");
  EXPECT_EQ(std::set<std::string>(steps.begin(), steps.end()).size(), steps.size());
  EXPECT_EQ(std::count(steps.begin(), steps.end(), "lower_precision"), d.kept == "bf16" ? 1 : 0);
  const at::Tensor x = BranchyInput(2);
  const std::vector<at::Tensor> got = Flat(optimized.forward({x})), want = Flat(BranchyModule().forward({x}));
  for (const at::Tensor& t : got) EXPECT_EQ(t.scalar_type(), at::kFloat);
  EXPECT_LE(autograph::RelativeError(got, want), 0.1);
}

TEST(ChoosePrecision, Bf16BeyondTheToleranceStaysFp32AndSaysSo) {
  autograph::OptimizeOptions options = Options("bf16");
  if (!autograph::OffersLoweredPlan(options)) GTEST_SKIP() << "this CPU has no bf16 instructions";
  options.numerics.tolerance = 1e-7;
  autograph::OptimizeReport report;
  torch::jit::Module optimized = autograph::optimize(BranchyModule(), options, &report);
  ASSERT_TRUE(report.precision.has_value());
  EXPECT_EQ(report.precision->kept, "fp32");
  EXPECT_GT(report.precision->error, 1e-7);  // the whole graph lowered
  EXPECT_NE(report.precision->note.find("beyond the tolerance"), std::string::npos) << report.precision->note;
  EXPECT_EQ(report.ops_lowered, 0);
  const at::Tensor x = BranchyInput(2);
  EXPECT_LE(autograph::RelativeError(Flat(optimized.forward({x})), Flat(BranchyModule().forward({x}))), 1e-5);
}

// A 1x1 convolution of 4 channels does 2 * 4 = 8 FLOPs per output element and moves about 8 bytes per
// output element: memory-bound on every device model (the CPU's ridge is 8 FLOPs per byte at the least).
TEST(ChoosePrecision, AGraphWithNothingComputeBoundLowersNothingAndSaysWhy) {
  autograph::OptimizeOptions options = Options("bf16");
  if (!autograph::OffersLoweredPlan(options)) GTEST_SKIP() << "this CPU has no bf16 instructions";
  torch::jit::Module m("__torch__.autograph_test.Pointwise");
  m.register_attribute("training", c10::BoolType::get(), false);
  m.register_parameter("w", torch::randn({4, 4, 1, 1}), false);
  m.define(R"JIT(
def forward(self, x):
    return torch.relu(torch.conv2d(x, self.w))
)JIT");
  autograph::OptimizeReport report;
  autograph::optimize(m, options, &report);
  ASSERT_TRUE(report.precision.has_value());
  EXPECT_EQ(report.precision->kept, "fp32");
  EXPECT_NE(report.precision->note.find("no compute-bound"), std::string::npos) << report.precision->note;
  EXPECT_EQ(report.ops_lowered, 0);
}

TEST(ChoosePrecision, ATwinWithinTheToleranceIsTimedBesideTheProgram) {
  torch::jit::Module optimized = autograph::optimize(BranchyModule(), Options("fp32"));
  auto planned = ProgramOf(optimized);
  const std::vector<c10::IValue> inputs = {BranchyInput(2)};
  const autograph::PrecisionDecision d = autograph::JudgeTwin(*planned, *Twin(*planned), "tf32", inputs, 0.01, c10::kCPU);
  EXPECT_EQ(d.error, 0.0);  // TF32 is CUDA's: on the CPU the twin computes as float32 does
  EXPECT_GT(d.fp32_ms, 0.0);
  EXPECT_GT(d.lowered_ms, 0.0);
  EXPECT_EQ(d.kept, d.lowered_ms < 0.98 * d.fp32_ms ? "tf32" : "fp32");  // kept for a gain beyond noise
}

TEST(ChoosePrecision, ATwinBeyondTheToleranceIsNotKeptNorTimed) {
  torch::jit::Module optimized = autograph::optimize(BranchyModule(), Options("fp32"));
  torch::jit::Module other = BranchyModule();
  other.attr("w1").toTensor().mul_(1.1);  // outputs moved by about a tenth of their scale
  torch::jit::Module moved = autograph::optimize(other, Options("fp32"));
  const std::vector<c10::IValue> inputs = {BranchyInput(2)};
  const autograph::PrecisionDecision d =
      autograph::JudgeTwin(*ProgramOf(optimized), *ProgramOf(moved), "tf32", inputs, 0.01, c10::kCPU);
  EXPECT_GT(d.error, 0.01);
  EXPECT_EQ(d.kept, "fp32");
  EXPECT_EQ(d.fp32_ms, -1);
  EXPECT_NE(d.note.find("beyond the tolerance"), std::string::npos) << d.note;
}

// On zeros the moved weight's products are zeros either way; on the calibration input they are not.
TEST(ChoosePrecision, ATwinIsJudgedOnTheCalibrationInputsToo) {
  torch::jit::Module optimized = autograph::optimize(BranchyModule(), Options("fp32"));
  torch::jit::Module other = BranchyModule();
  other.attr("w1").toTensor().mul_(1.1);
  torch::jit::Module moved = autograph::optimize(other, Options("fp32"));
  const std::vector<c10::IValue> zeros = {at::zeros_like(BranchyInput(2))};
  const autograph::PrecisionDecision alone =
      autograph::JudgeTwin(*ProgramOf(optimized), *ProgramOf(moved), "tf32", zeros, 0.01, c10::kCPU);
  ASSERT_LE(alone.error, 0.01);
  EXPECT_EQ(alone.calibration_inputs, 0);
  const autograph::PrecisionDecision d = autograph::JudgeTwin(*ProgramOf(optimized), *ProgramOf(moved), "tf32", zeros,
                                                              0.01, c10::kCPU, {{BranchyInput(2)}});
  EXPECT_GT(d.error, 0.01);
  EXPECT_EQ(d.kept, "fp32");
  EXPECT_EQ(d.calibration_inputs, 1);
  EXPECT_NE(d.note.find("calibration"), std::string::npos) << d.note;
}

// Option accuracy: the same twin (one convolution's weight 10% larger) by max_error and by cosine, which
// a change of scale alone costs less; the report lists the measure on each judged call.
TEST(ChoosePrecision, ATwinIsJudgedByTheMeasureAsked) {
  torch::jit::Module optimized = autograph::optimize(BranchyModule(), Options("fp32"));
  torch::jit::Module other = BranchyModule();
  other.attr("w1").toTensor().mul_(1.1);
  torch::jit::Module moved = autograph::optimize(other, Options("fp32"));
  const std::vector<c10::IValue> inputs = {BranchyInput(2)};
  const std::vector<std::vector<c10::IValue>> calibration = {{BranchyInput(2)}};
  const autograph::PrecisionDecision by_error =
      autograph::JudgeTwin(*ProgramOf(optimized), *ProgramOf(moved), "tf32", inputs, 0.01, c10::kCPU, calibration);
  const autograph::PrecisionDecision by_cosine = autograph::JudgeTwin(
      *ProgramOf(optimized), *ProgramOf(moved), "tf32", inputs, 0.01, c10::kCPU, calibration, "cosine");
  EXPECT_EQ(by_error.accuracy, "max_error");
  EXPECT_EQ(by_cosine.accuracy, "cosine");
  EXPECT_GT(by_error.error, 0.01);
  EXPECT_GT(by_cosine.error, 0.0);
  EXPECT_LT(by_cosine.error, by_error.error);
  ASSERT_EQ(by_cosine.judged.size(), 2u);
  EXPECT_EQ(by_cosine.error, std::max(by_cosine.judged[0], by_cosine.judged[1]));
  EXPECT_EQ(by_error.judged.size(), 2u);
  autograph::OptimizeOptions options = Options("fp32");
  options.numerics.accuracy = "top5";
  EXPECT_THROW(autograph::optimize(BranchyModule(), options), autograph::InputError);
}

TEST(ChoosePrecision, ASavedProgramKeepsItsTf32Switch) {
  torch::jit::Module optimized = autograph::optimize(BranchyModule(), Options("fp32"));
  auto twin = Twin(*ProgramOf(optimized));
  optimized.setattr("program", c10::IValue(twin));
  std::stringstream saved;
  optimized.save(saved);
  torch::jit::Module loaded = torch::jit::load(saved);
  EXPECT_TRUE(ProgramOf(loaded)->options().tf32);
  EXPECT_FALSE(ProgramOf(autograph::optimize(BranchyModule(), Options("fp32")))->options().tf32);
}

}  // namespace
