// CaptureInputs: what a CUDA Graph replay copies (the user's tensors, once per call) and what it reads
// in place (weights and packages, never copied; other weights or weights written in place make
// another key). On CPU tensors: the policy is the same whatever the device.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "executor/capture_inputs.h"

namespace {

using autograph::CaptureInputs;

// Two weights (a CUDA-side weight and a package's bytes, as an exported program passes them) and the user's input.
struct Call {
  at::Tensor weight = torch::randn({8, 4});
  at::Tensor package = torch::randint(0, 255, {64}, torch::kUInt8);
  std::vector<c10::IValue> With(const at::Tensor& input) const { return {weight, package, input}; }
};

TEST(CaptureInputs, ABufferIsTheWeightItselfAndACloneOfTheUsersInput) {
  Call call;
  CaptureInputs inputs({true, true, false});
  const at::Tensor x = torch::randn({2, 4});
  std::vector<c10::IValue> buffers = inputs.Buffers(call.With(x));
  ASSERT_EQ(buffers.size(), 3u);
  EXPECT_TRUE(buffers[0].toTensor().is_same(call.weight));
  EXPECT_TRUE(buffers[1].toTensor().is_same(call.package));
  EXPECT_NE(buffers[2].toTensor().data_ptr(), x.data_ptr());
  EXPECT_TRUE(buffers[2].toTensor().equal(x));
}

TEST(CaptureInputs, AReplayCopiesTheUsersInputsOnlyEveryCall) {
  Call call;
  CaptureInputs inputs({true, true, false});
  std::vector<c10::IValue> buffers = inputs.Buffers(call.With(torch::randn({2, 4})));
  size_t copies = 0;
  for (int i = 0; i < 10; ++i) {
    const at::Tensor x = torch::randn({2, 4});
    copies += inputs.CopyInto(call.With(x), buffers);
    EXPECT_TRUE(buffers[2].toTensor().equal(x));  // the graph reads this call's input
  }
  EXPECT_EQ(copies, 10u);  // one per call: the weight and the package stay where they are
  EXPECT_TRUE(buffers[0].toTensor().is_same(call.weight));
  // The same tensor again is copied again: its memory may have been written without a version bump.
  const at::Tensor x = torch::randn({2, 4});
  EXPECT_EQ(inputs.CopyInto(call.With(x), buffers), 1u);
  x.data().add_(1);  // no version bump
  EXPECT_EQ(inputs.CopyInto(call.With(x), buffers), 1u);
  EXPECT_TRUE(buffers[2].toTensor().equal(x));
  // Only the buffer itself (a timing run bound to the buffers) needs no copy.
  EXPECT_EQ(inputs.CopyInto(buffers, buffers), 0u);
}

TEST(CaptureInputs, WithoutBoundInputsEveryTensorIsCopied) {  // the TorchScript path: weights are constants
  Call call;
  CaptureInputs inputs;
  std::vector<c10::IValue> buffers = inputs.Buffers(call.With(torch::randn({2, 4})));
  EXPECT_FALSE(buffers[0].toTensor().is_same(call.weight));
  EXPECT_EQ(inputs.CopyInto(call.With(torch::randn({2, 4})), buffers), 3u);
}

TEST(CaptureInputs, OtherWeightsOrWeightsWrittenInPlaceMakeAnotherKey) {
  Call call;
  CaptureInputs inputs({true, true, false});
  const auto key = inputs.KeyOf(call.With(torch::randn({2, 4})));
  ASSERT_TRUE(key.has_value());
  // Another input of the same shape replays the same graph.
  EXPECT_EQ(inputs.KeyOf(call.With(torch::randn({2, 4}))), key);
  // Another shape, another graph.
  EXPECT_NE(inputs.KeyOf(call.With(torch::randn({3, 4}))), key);
  // Other weights with the same values (another exported program of the same text): another graph,
  // which reads them, not the first program's.
  Call other = call;
  other.weight = call.weight.clone();
  EXPECT_NE(inputs.KeyOf(other.With(torch::randn({2, 4}))), key);
  // The same memory wrapped in a new tensor (as a caller may pass its constants each run): the same graph.
  Call wrapped = call;
  wrapped.weight = call.weight.view({8, 4});
  EXPECT_EQ(inputs.KeyOf(wrapped.With(torch::randn({2, 4}))), key);
  // Written in place: what was derived from it at capture is stale, so another graph.
  call.weight.mul_(2);
  EXPECT_NE(inputs.KeyOf(call.With(torch::randn({2, 4}))), key);
  // The same memory read with other strides.
  Call transposed = call;
  transposed.weight = call.weight.t();
  EXPECT_NE(inputs.KeyOf(transposed.With(torch::randn({2, 4}))), inputs.KeyOf(call.With(torch::randn({2, 4}))));
}

TEST(CaptureInputs, NonTensorValuesArePartOfTheKeyAndOthersCannotBeCaptured) {
  CaptureInputs inputs;
  const at::Tensor x = torch::randn({2});
  const auto one = inputs.KeyOf({x, c10::IValue(int64_t{1})});
  ASSERT_TRUE(one.has_value());
  EXPECT_EQ(inputs.KeyOf({x, c10::IValue(int64_t{1})}), one);
  EXPECT_NE(inputs.KeyOf({x, c10::IValue(int64_t{2})}), one);
  EXPECT_NE(inputs.KeyOf({x, c10::IValue(1.0)}), one);
  c10::List<at::Tensor> list;
  list.push_back(x);
  EXPECT_FALSE(inputs.KeyOf({c10::IValue(list)}).has_value());
}

TEST(CaptureInputs, TheFloat32PrecisionSwitchesArePartOfTheKey) {
  // A graph captured under TF32 replays TF32 kernels: after the user turns TF32 off (or on, by the legacy
  // or the new switches) the same inputs need another capture. The switches are process state: no GPU.
  using B = at::Float32Backend;
  using O = at::Float32Op;
  at::Context& ctx = at::globalContext();
  std::vector<std::pair<O, at::Float32Precision>> found;
  for (O op : {O::ALL, O::CONV, O::RNN}) found.emplace_back(op, ctx.float32Precision(B::CUDA, op));
  const auto restore = [&] {
    for (const auto& [op, p] : found) ctx.setFloat32Precision(B::CUDA, op, p);
  };
  const bool cudnn = ctx.allowTF32CuDNN(O::CONV);
  CaptureInputs inputs;
  const std::vector<c10::IValue> call = {torch::randn({2, 4})};
  const auto key = inputs.KeyOf(call);
  ctx.setFloat32Precision(B::CUDA, O::CONV, cudnn ? at::Float32Precision::IEEE : at::Float32Precision::TF32);
  EXPECT_NE(inputs.KeyOf(call), key);
  restore();
  EXPECT_EQ(inputs.KeyOf(call), key);
  ctx.setAllowTF32CuDNN(!cudnn);  // the legacy switch (torch.backends.cudnn.allow_tf32)
  EXPECT_NE(inputs.KeyOf(call), key);
  ctx.setAllowTF32CuDNN(cudnn);
  restore();
  EXPECT_EQ(inputs.KeyOf(call), key);
}

}  // namespace
