// The CUDA implementation of autograph::stitched (generated kernels compiled with NVRTC) against the
// same computation written with ATen ops. Needs a CUDA device; elsewhere every test skips, and
// stitch_cuda_source_test.cpp covers code generation and NVRTC compilation.
#include <gtest/gtest.h>
#include <torch/cuda.h>
#include <torch/torch.h>

#ifdef AUTOGRAPH_WITH_CUDA
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#endif

#include <cmath>
#include <string>
#include <thread>
#include <vector>

#include "ops/stitched_kernels.h"
#include "stitch/stitch_layout.h"
#include "stitch/stitch_program.h"
#include "stitch_test_programs.h"

namespace autograph {
namespace {

#ifdef AUTOGRAPH_WITH_CUDA

#define SKIP_WITHOUT_CUDA_DEVICE() \
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device"

const at::TensorOptions kFloatCuda = at::TensorOptions().dtype(at::kFloat).device(at::kCUDA);

std::vector<at::Tensor> RunStitched(const std::string& text, const std::vector<at::Tensor>& inputs) {
  StitchProgram program = ParseStitchProgram(text);
  StitchLayout layout = MakeStitchLayout(program, inputs);
  std::vector<at::Tensor> outputs = AllocateStitchOutputs(layout);
  RunStitchedCuda(program, text, layout, inputs, outputs);
  return outputs;
}

// Tolerances, as |got - want| <= tolerance * max|want| per output (relative to the output's scale,
// so that values near zero after cancellation, e.g. x - mean, do not demand impossible digits):
//  - float elementwise: CUDA's float math (expf, erff, tanhf, powf) is within 2 ulp, and ATen may
//    evaluate a formula in another order (gelu's constants, sigmoid): a few ulp, about 1e-6;
//    1e-5 leaves margin.
//  - float reductions: both sides add `cols` float terms in different orders. Rounding errors of a
//    sum grow like a random walk, about eps * sqrt(cols) relative to the sum of magnitudes, and the
//    result feeds further ops (exp, rsqrt); 1e-5 * sqrt(cols) (~80 eps * sqrt(cols)) covers that,
//    from 1e-5 for one column up to 1e-2 for 10^6 columns.
//  - double: the same rules with 1e-12.
//  - half / bfloat16: compute is float on both sides; the outputs are rounded to the storage type,
//    so a result may differ by one unit in the last place of the storage type (2^-11 / 2^-8
//    relative) and inputs to later ops by as much: 4e-3 for half, 3e-2 for bfloat16.
double ReductionTolerance(double base, int64_t cols) { return base * std::sqrt(std::max<double>(1.0, cols)); }

void ExpectClose(const std::vector<at::Tensor>& got, const std::vector<at::Tensor>& want, double tolerance,
                 const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i) {
    ASSERT_EQ(got[i].sizes(), want[i].sizes()) << what << " output " << i;
    ASSERT_EQ(got[i].scalar_type(), want[i].scalar_type()) << what << " output " << i;
    ASSERT_TRUE(got[i].is_contiguous()) << what << " output " << i;
    if (want[i].numel() == 0) continue;
    at::Tensor g = got[i].to(at::kDouble), w = want[i].to(at::kDouble);
    EXPECT_TRUE(at::equal(at::isnan(g), at::isnan(w))) << what << " output " << i << ": NaNs differ";
    g = at::nan_to_num(g, 0, 1e300, -1e300);
    w = at::nan_to_num(w, 0, 1e300, -1e300);
    const double scale = w.abs().max().item<double>();
    const double error = (g - w).abs().max().item<double>();
    EXPECT_LE(error, tolerance * scale + 1e-30) << what << " output " << i << " (max |want| " << scale << ")";
  }
}

TEST(StitchedCuda, ElementwiseChainWithBroadcastAndStridedInputs) {
  SKIP_WITHOUT_CUDA_DEVICE();
  for (const std::vector<int64_t>& shape : std::vector<std::vector<int64_t>>{{4, 5, 6}, {3, 1, 7}, {2, 3, 1001}, {1}}) {
    const int64_t dims = static_cast<int64_t>(shape.size());
    at::Tensor x = at::randn(shape, kFloatCuda);
    std::vector<int64_t> y_shape(shape.begin(), shape.end() - 1);
    y_shape.push_back(1);                          // broadcast along the last dim
    if (dims > 1) y_shape.erase(y_shape.begin());  // and along the first
    at::Tensor y = at::randn(y_shape, kFloatCuda);
    std::vector<int64_t> reversed(shape.rbegin(), shape.rend()), order;
    for (int64_t d = dims - 1; d >= 0; --d) order.push_back(d);
    at::Tensor z = at::randn(reversed, kFloatCuda).permute(order);  // non-contiguous
    std::vector<at::Tensor> got = RunStitched(kElementwise, {x, y, z});
    at::Tensor v9 = at::tanh(at::gelu((x + y) * 0.5) * at::sigmoid(z));
    at::Tensor v11 = at::maximum(v9, at::gelu(x, "tanh"));
    at::Tensor v13 = at::pow(y, 2).expand(shape).contiguous();
    // A row value of a program without reductions: constant over the layout's rows, whatever split it picks.
    const auto row_shape = MakeStitchLayout(ParseStitchProgram(kElementwise), {x, y, z}).output_shapes[2];
    at::Tensor v15 = at::full(row_shape, 6.0, kFloatCuda);
    ExpectClose(got, {v11, v13, v15}, 1e-5, "elementwise " + c10::str(c10::IntArrayRef(shape)));
  }
}

TEST(StitchedCuda, SoftmaxLayerNormAndReductionsInSequence) {
  SKIP_WITHOUT_CUDA_DEVICE();
  for (int64_t cols : {1, 7, 32, 33, 257, 768, 5000, 8193, 1000000}) {
    for (int64_t rows : {3, 37}) {
      if (cols >= 5000 && rows > 3) continue;
      const std::string shape = " " + std::to_string(rows) + "x" + std::to_string(cols);
      const double tolerance = ReductionTolerance(1e-5, cols);
      at::Tensor x = at::randn({rows, cols}, kFloatCuda) * 3;
      at::Tensor xt = at::randn({cols, rows}, kFloatCuda).t();  // columns strided
      at::Tensor w = at::randn({cols}, kFloatCuda), b = at::randn({cols}, kFloatCuda);

      ExpectClose(RunStitched(kSoftmax, {x}), {at::softmax(x / 8, -1)}, tolerance, "softmax" + shape);
      ExpectClose(RunStitched(kSoftmax, {xt}), {at::softmax(xt / 8, -1)}, tolerance, "softmax (transposed)" + shape);
      ExpectClose(RunStitched(kLayerNorm, {x, w, b}), {at::layer_norm(x, {cols}, w, b, 1e-5)}, tolerance,
                  "layer norm" + shape);
      ExpectClose(RunStitched(kLayerNorm, {xt, w, b}), {at::layer_norm(xt, {cols}, w, b, 1e-5)}, tolerance,
                  "layer norm (transposed)" + shape);
      at::Tensor lse = at::logsumexp(x, {-1});
      at::Tensor log_softmax = x - lse.unsqueeze(-1);
      ExpectClose(RunStitched(kTwoReductions, {x}), {lse, std::get<0>(log_softmax.min(-1)), log_softmax}, tolerance,
                  "two reductions" + shape);
    }
  }
}

TEST(StitchedCuda, RowOutputsWithKeepdimOverSeveralReducedDims) {
  SKIP_WITHOUT_CUDA_DEVICE();
  for (const std::vector<int64_t>& shape :
       std::vector<std::vector<int64_t>>{{3, 4, 5}, {2, 1, 7, 9}, {5, 1, 1}, {2, 300, 50}}) {
    const std::vector<int64_t> reduced{static_cast<int64_t>(shape.size()) - 2, static_cast<int64_t>(shape.size()) - 1};
    at::Tensor x = at::randn(shape, kFloatCuda);
    std::vector<int64_t> reversed(shape.rbegin(), shape.rend()), order;
    for (int64_t d = static_cast<int64_t>(shape.size()) - 1; d >= 0; --d) order.push_back(d);
    at::Tensor xt = at::randn(reversed, kFloatCuda).permute(order);
    const int64_t cols = shape[shape.size() - 1] * shape[shape.size() - 2];
    for (const at::Tensor& input : {x, xt}) {
      at::Tensor mean = input.mean(reduced, /*keepdim=*/true);
      at::Tensor spread = input.amax(reduced) - input.mean(reduced);
      ExpectClose(RunStitched(kKeepdim, {input}), {mean, spread}, ReductionTolerance(1e-5, cols),
                  "keepdim " + c10::str(c10::IntArrayRef(shape)));
    }
  }
}

TEST(StitchedCuda, DoubleHalfAndBfloat16) {
  SKIP_WITHOUT_CUDA_DEVICE();
  for (int64_t cols : {7, 768, 5000, 20000}) {
    const std::string shape = " 5x" + std::to_string(cols);
    at::Tensor x = at::randn({5, cols}, kFloatCuda.dtype(at::kDouble));
    ExpectClose(RunStitched(kSoftmax, {x}), {at::softmax(x / 8, -1)}, ReductionTolerance(1e-12, cols),
                "double softmax" + shape);
    for (auto dtype : {at::kHalf, at::kBFloat16}) {
      const double tolerance = dtype == at::kHalf ? 4e-3 : 3e-2;
      at::Tensor h = at::randn({5, cols}, kFloatCuda).to(dtype);
      at::Tensor w = at::randn({cols}, kFloatCuda).to(dtype), b = at::randn({cols}, kFloatCuda).to(dtype);
      // Reference: the same float math ATen's reduced-precision kernels use, rounded once at the end.
      at::Tensor want = at::layer_norm(h.to(at::kFloat), {cols}, w.to(at::kFloat), b.to(at::kFloat), 1e-5).to(dtype);
      ExpectClose(RunStitched(kLayerNorm, {h, w, b}), {want}, tolerance,
                  std::string(c10::toString(dtype)) + " layer norm" + shape);
      ExpectClose(RunStitched(kSoftmax, {h}), {at::softmax(h.to(at::kFloat) / 8, -1).to(dtype)}, tolerance,
                  std::string(c10::toString(dtype)) + " softmax" + shape);
    }
  }
}

TEST(StitchedCuda, MaxAndMinPropagateNaN) {
  SKIP_WITHOUT_CUDA_DEVICE();
  at::Tensor x = at::randn({4, 300}, kFloatCuda);
  x.index_put_({1, 17}, NAN);
  at::Tensor y = at::randn({4, 300}, kFloatCuda);
  y.index_put_({2, 5}, NAN);
  const char* text =
      "reduce 1; in 0; in 1; rowmax 0; rowmin 1; max 0 1; min 0 1; relu 0; outrow 2; outrow 3; out 4; out 5; out 6";
  ExpectClose(RunStitched(text, {x, y}), {x.amax(-1), y.amin(-1), at::maximum(x, y), at::minimum(x, y), at::relu(x)},
              1e-6, "NaN");
}

TEST(StitchedCuda, EmptyDomains) {
  SKIP_WITHOUT_CUDA_DEVICE();
  at::Tensor none = at::randn({0, 7}, kFloatCuda);
  std::vector<at::Tensor> got = RunStitched(kSoftmax, {none});
  EXPECT_EQ(got[0].sizes(), none.sizes());
  // No columns: the row outputs are still written (the mean of nothing is NaN, like ATen's).
  at::Tensor no_cols = at::randn({3, 0, 5}, kFloatCuda);
  got = RunStitched("reduce 2; in 0; rowmean 0; rowsum 0; outrow 1 keepdim; outrow 2", {no_cols});
  ExpectClose(got, {no_cols.mean({1, 2}, true), no_cols.sum({1, 2})}, 1e-6, "no columns");
}

TEST(StitchedCuda, RunsOnTheCurrentStreamAndFromSeveralThreads) {
  SKIP_WITHOUT_CUDA_DEVICE();
  at::Tensor x = at::randn({64, 1000}, kFloatCuda);
  at::Tensor want = at::softmax(x / 8, -1);
  {
    c10::cuda::CUDAStream side = c10::cuda::getStreamFromPool();
    c10::cuda::getCurrentCUDAStream().synchronize();  // x was written on the default stream
    c10::cuda::CUDAStreamGuard guard(side);
    std::vector<at::Tensor> got = RunStitched(kSoftmax, {x});
    side.synchronize();
    ExpectClose(got, {want}, ReductionTolerance(1e-5, 1000), "side stream");
  }
  // A program no other test uses, so the threads race to compile and insert the same kernel.
  const std::string text = "reduce 1; in 0; const 7; div 0 1; rowmax 2; sub 2 3; exp 4; rowsum 5; div 5 6; out 7";
  at::Tensor want7 = at::softmax(x / 7, -1);
  std::vector<std::vector<at::Tensor>> results(4);
  std::vector<std::thread> threads;
  for (size_t t = 0; t < results.size(); ++t) {
    threads.emplace_back([&, t] {
      results[t] = RunStitched(text, {x});
      c10::cuda::getCurrentCUDAStream().synchronize();
    });
  }
  for (std::thread& t : threads) t.join();
  for (const auto& r : results) ExpectClose(r, {want7}, ReductionTolerance(1e-5, 1000), "threads");
}

#else

TEST(StitchedCuda, NeedsCudaBuild) { GTEST_SKIP() << "built without CUDA"; }

#endif  // AUTOGRAPH_WITH_CUDA

}  // namespace
}  // namespace autograph
