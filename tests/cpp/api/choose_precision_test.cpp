// Option precision on the TorchScript path (ChoosePrecision, JudgeTwin): tf32 on a CPU lowers nothing
// and the report says why; bf16 and fp16 are refused before any work; a twin is judged against the
// program in full float32 (within the tolerance, then timed) and a saved program keeps its tf32 switch.
// The twin's judgement runs on the CPU, where a TF32 twin computes as float32 does (error 0); a twin
// of other weights stands for one whose rounding moved its outputs.
#include <gtest/gtest.h>

#include <torch/script.h>
#include <torch/torch.h>

#include <sstream>

#include "api/choose_precision.h"
#include "autograph/error.h"
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

TEST(ChoosePrecision, Bf16AndFp16AreTheExportPathsAndRefusedFirst) {
  for (const char* precision : {"bf16", "fp16"}) {
    try {
      autograph::optimize(BranchyModule(), Options(precision));
      FAIL() << precision << " was not refused";
    } catch (const autograph::InputError& e) {
      EXPECT_NE(std::string(e.what()).find("export path"), std::string::npos) << e.what();
    }
  }
}

TEST(ChoosePrecision, ATwinWithinTheToleranceIsTimedBesideTheProgram) {
  torch::jit::Module optimized = autograph::optimize(BranchyModule(), Options("fp32"));
  auto planned = ProgramOf(optimized);
  const std::vector<c10::IValue> inputs = {BranchyInput(2)};
  const autograph::PrecisionDecision d = autograph::JudgeTwin(*planned, *Twin(*planned), "tf32", inputs, 0.01, c10::kCPU);
  EXPECT_EQ(d.error, 0.0);  // TF32 is CUDA's: on the CPU the twin computes as float32 does
  EXPECT_GT(d.fp32_ms, 0.0);
  EXPECT_GT(d.lowered_ms, 0.0);
  EXPECT_EQ(d.kept, d.lowered_ms < d.fp32_ms ? "tf32" : "fp32");
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
