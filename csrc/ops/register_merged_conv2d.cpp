// autograph::merged_conv2d: several convolutions of one input as one kernel, for Python users and
// tests. It merges the weights on every call (fine for a user-facing op); the executor merges them
// once per plan instead (StagePlan). A fragment of the library that register_autograph.cpp defines.
#include <torch/library.h>

#include "autograph/error.h"
#include "merge/merged_convolution.h"

namespace autograph {
namespace {

// paddings: 2 per convolution, flattened ([ph0, pw0, ph1, pw1, ...]).
std::vector<at::Tensor> MergedConv2dOp(const at::Tensor& input, const std::vector<at::Tensor>& weights,
                                       const c10::List<std::optional<at::Tensor>>& biases,
                                       const std::vector<int64_t>& stride, const std::vector<int64_t>& paddings,
                                       const std::vector<int64_t>& dilation) {
  try {
    if (paddings.size() != 2 * weights.size()) {
      throw Error("paddings has " + std::to_string(paddings.size()) + " values for " +
                  std::to_string(weights.size()) + " weights; give 2 per convolution (height, width), flattened");
    }
    std::vector<std::optional<at::Tensor>> bias_vector;
    for (size_t i = 0; i < biases.size(); ++i) bias_vector.push_back(biases.get(i));
    std::vector<std::vector<int64_t>> per_conv;
    for (size_t i = 0; i < weights.size(); ++i) per_conv.push_back({paddings[2 * i], paddings[2 * i + 1]});
    return RunMergedConvolution(input, MergeConvolutions(weights, bias_vector, stride, per_conv, dilation));
  } catch (const Error& e) {
    TORCH_CHECK_VALUE(false, "autograph::merged_conv2d: ", e.what());  // ValueError in Python
  }
}

}  // namespace
}  // namespace autograph

TORCH_LIBRARY_FRAGMENT(autograph, m) {
  // Pure: returns channel slices (views) of one fresh output, aliasing none of its arguments.
  m.def("merged_conv2d(Tensor input, Tensor[] weights, Tensor?[] biases, int[] stride, int[] paddings, "
        "int[] dilation) -> Tensor[]",
        &autograph::MergedConv2dOp);
}
