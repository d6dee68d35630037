// Option accuracy's measures (core/output_error.h), each 0 where the outputs agree: max_error relative to an
// output's scale, top1 the share of rows whose largest entry moved (over all calls' rows), cosine and
// sqnr the worst call; incomparable outputs are infinitely far, non-finite ones NaN.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "autograph/error.h"
#include "core/output_error.h"

namespace {

using Calls = std::vector<std::vector<at::Tensor>>;

at::Tensor Rows(std::vector<float> values, int64_t columns) {
  return at::tensor(values, at::kFloat).reshape({-1, columns});
}

TEST(AccuracyMeasure, EqualOutputsLoseNothingByAnyMeasure) {
  const at::Tensor x = at::randn({4, 10});
  for (const std::string& measure : autograph::AccuracyMeasures()) {
    const autograph::MeasuredOutputs m = autograph::MeasureOutputs(measure, {{x}, {x}}, {{x}, {x}});
    EXPECT_EQ(m.loss, 0.0) << measure;
    EXPECT_EQ(m.per_call, (std::vector<double>{0.0, 0.0})) << measure;
  }
}

TEST(AccuracyMeasure, Top1CountsTheRowsWhoseLargestEntryMovedOverAllCalls) {
  const at::Tensor want = Rows({0, 1, 0, /**/ 2, 0, 0}, 3);
  const at::Tensor one_moved = Rows({0, 1, 0, /**/ 0, 0, 3}, 3);
  // Call 0: 1 of 2 rows moved; call 1: none of 2. Over all calls, 1 of 4; a change of magnitude that
  // leaves the largest entry in place costs nothing.
  const autograph::MeasuredOutputs m =
      autograph::MeasureOutputs("top1", {{one_moved}, {want * 5}}, {{want}, {want}});
  EXPECT_DOUBLE_EQ(m.loss, 0.25);
  EXPECT_EQ(m.per_call, (std::vector<double>{0.5, 0.0}));
  // A row holding a NaN changed, whatever argmax makes of it.
  const at::Tensor nan_row = Rows({0, std::nanf(""), 0, /**/ 2, 0, 0}, 3);
  EXPECT_DOUBLE_EQ(autograph::MeasureOutputs("top1", {{nan_row}}, {{want}}).loss, 0.5);
}

TEST(AccuracyMeasure, CosineAndSqnrTakeTheWorstCall) {
  const at::Tensor want = at::tensor({3.0f, 4.0f});
  const at::Tensor scaled = want * 2, orthogonal = at::tensor({-4.0f, 3.0f}), off = at::tensor({3.0f, 5.0f});
  EXPECT_NEAR(autograph::MeasureOutputs("cosine", {{scaled}}, {{want}}).loss, 0.0, 1e-12);
  EXPECT_NEAR(autograph::MeasureOutputs("cosine", {{scaled}, {orthogonal}}, {{want}, {want}}).loss, 1.0, 1e-12);
  // sqnr: noise power 1 over signal power 25.
  const autograph::MeasuredOutputs m = autograph::MeasureOutputs("sqnr", {{want}, {off}}, {{want}, {want}});
  EXPECT_DOUBLE_EQ(m.loss, 1.0 / 25);
  EXPECT_EQ(m.per_call, (std::vector<double>{0.0, 1.0 / 25}));
  EXPECT_DOUBLE_EQ(autograph::MeasureOutputs("max_error", {{off}}, {{want}}).loss, 0.25);
}

TEST(AccuracyMeasure, IncomparableOutputsAreInfinitelyFarAndNonFiniteOnesNaN) {
  const at::Tensor want = at::randn({2, 3});
  for (const std::string& measure : autograph::AccuracyMeasures()) {
    EXPECT_TRUE(std::isinf(autograph::MeasureOutputs(measure, {{want.t()}}, {{want}}).loss)) << measure;
    EXPECT_TRUE(std::isinf(autograph::MeasureOutputs(measure, {{want.to(at::kDouble)}}, {{want}}).loss)) << measure;
    const at::Tensor labels = at::tensor({1, 2}), other = at::tensor({1, 3});
    EXPECT_TRUE(std::isinf(autograph::MeasureOutputs(measure, {{want, other}}, {{want, labels}}).loss)) << measure;
  }
  const at::Tensor inf = want.clone().fill_(std::numeric_limits<float>::infinity());
  for (const char* measure : {"max_error", "cosine", "sqnr"})
    EXPECT_TRUE(std::isnan(autograph::MeasureOutputs(measure, {{inf}}, {{want}}).loss)) << measure;
  EXPECT_THROW(autograph::MeasureOutputs("top5", {{want}}, {{want}}), autograph::InputError);
}

}  // namespace
