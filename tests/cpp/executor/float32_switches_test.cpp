// Tf32Scope and FullPrecisionScope: TF32 on (off) for CUDA's float32 matmuls and convolutions inside,
// the process's switches as they were after, also when TF32 scopes overlap (the last to leave
// restores). The switches are plain process state, so this runs without a GPU.
#include "executor/float32_switches.h"

#include <ATen/Context.h>
#include <gtest/gtest.h>

#include <memory>
#include <tuple>

namespace autograph {
namespace {

using B = at::Float32Backend;
using O = at::Float32Op;
using P = at::Float32Precision;

// Every switch the scope touches, as stored.
auto Switches() {
  at::Context& ctx = at::globalContext();
  return std::make_tuple(ctx.float32Precision(B::CUDA, O::MATMUL), ctx.float32Precision(B::CUDA, O::CONV),
                         ctx.float32Precision(B::CUDA, O::RNN), ctx.float32Precision(B::MKLDNN, O::MATMUL),
                         ctx.float32MatmulPrecision());
}

void ExpectTf32Inside() {
  at::Context& ctx = at::globalContext();
  EXPECT_TRUE(ctx.allowTF32CuBLAS());  // also checks that the legacy and new matmul switches agree
  EXPECT_EQ(ctx.float32Precision(B::CUDA, O::CONV), P::TF32);
  EXPECT_EQ(ctx.float32Precision(B::CUDA, O::RNN), P::TF32);
}

// Leaves the process's switches as each test found them, for the tests after it in this binary.
class Tf32ScopeTest : public ::testing::Test {
 protected:
  void SetUp() override { found_ = Switches(); }
  void TearDown() override {
    at::Context& ctx = at::globalContext();
    ctx.setFloat32MatmulPrecision(std::get<4>(found_) == at::Float32MatmulPrecision::HIGHEST ? "highest" : "high");
    ctx.setFloat32Precision(B::CUDA, O::MATMUL, std::get<0>(found_));
    ctx.setFloat32Precision(B::CUDA, O::CONV, std::get<1>(found_));
    ctx.setFloat32Precision(B::CUDA, O::RNN, std::get<2>(found_));
    ctx.setFloat32Precision(B::MKLDNN, O::MATMUL, std::get<3>(found_));
  }

 private:
  decltype(Switches()) found_;
};

TEST_F(Tf32ScopeTest, TurnsTf32OnInsideAndGivesTheDefaultsBack) {
  const auto before = Switches();
  {
    const Tf32Scope scope(true);
    ExpectTf32Inside();
  }
  EXPECT_EQ(Switches(), before);
}

TEST_F(Tf32ScopeTest, GivesBackWhatTheUserSet) {
  at::Context& ctx = at::globalContext();
  ctx.setFloat32MatmulPrecision("high");
  ctx.setFloat32Precision(B::CUDA, O::CONV, P::IEEE);
  const auto before = Switches();
  {
    const Tf32Scope scope(true);
    ExpectTf32Inside();
  }
  EXPECT_EQ(Switches(), before);
}

TEST_F(Tf32ScopeTest, OverlappingScopesRestoreWhenTheLastLeaves) {
  const auto before = Switches();
  auto outer = std::make_unique<Tf32Scope>(true);
  {
    const Tf32Scope inner(true);
    ExpectTf32Inside();
  }
  ExpectTf32Inside();  // the outer program still runs
  outer.reset();
  EXPECT_EQ(Switches(), before);
}

TEST_F(Tf32ScopeTest, FullPrecisionTurnsTf32OffInsideAndGivesTheSwitchesBack) {
  at::Context& ctx = at::globalContext();
  ctx.setFloat32MatmulPrecision("high");  // the user's TF32 matmuls; cuDNN's convolutions TF32 by default
  const auto before = Switches();
  {
    const FullPrecisionScope scope;
    EXPECT_FALSE(ctx.allowTF32CuBLAS());
    EXPECT_FALSE(ctx.allowTF32CuDNN(O::CONV));
    EXPECT_FALSE(ctx.allowTF32CuDNN(O::RNN));
  }
  EXPECT_EQ(Switches(), before);
}

TEST_F(Tf32ScopeTest, OffChangesNothing) {
  const auto before = Switches();
  {
    const Tf32Scope scope(false);
    EXPECT_EQ(Switches(), before);
  }
  EXPECT_EQ(Switches(), before);
}

}  // namespace
}  // namespace autograph
