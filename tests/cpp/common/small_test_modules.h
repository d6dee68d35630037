#pragma once
// Small scripted modules for executor tests that need no zoo model: quick to import and run, with
// concurrent branches, mergeable sibling convolutions and structured outputs.
#include <torch/script.h>
#include <torch/torch.h>

namespace autograph::testing {

// Three convolutions of one input (two 3x3 and a 1x1, all giving the same output size, so they form
// one merge class), each followed by an activation, joined elementwise; returns a tensor and a
// nested tuple holding a list: (sum, (a + 1, [b, c])).
inline torch::jit::Module BranchyModule() {
  torch::jit::Module m("__torch__.autograph_test.Branchy");
  m.register_attribute("training", c10::BoolType::get(), false);
  torch::manual_seed(7);
  m.register_parameter("w1", torch::randn({8, 4, 3, 3}) * 0.2, false);
  m.register_parameter("w2", torch::randn({8, 4, 3, 3}) * 0.2, false);
  m.register_parameter("w3", torch::randn({8, 4, 1, 1}) * 0.2, false);
  m.define(R"JIT(
def forward(self, x):
    a = torch.relu(torch.conv2d(x, self.w1, None, [1, 1], [1, 1]))
    b = torch.sigmoid(torch.conv2d(x, self.w2, None, [1, 1], [1, 1]))
    c = torch.tanh(torch.conv2d(x, self.w3, None, [1, 1], [0, 0]))
    d = a * b + c
    return d.sum(1), (a + 1.0, [b, c])
)JIT");
  return m;
}

// An input for BranchyModule: batch x 4 x 16 x 16.
inline at::Tensor BranchyInput(int64_t batch = 2, c10::Device device = c10::kCPU) {
  return torch::randn({batch, 4, 16, 16}, torch::TensorOptions().device(device));
}

}  // namespace autograph::testing
