#pragma once
// When several convolutions can become one without changing any output: the rules, on shapes and
// types only (no tensor data is touched), shared by MergeConvolutions (which then builds the merged
// weights) and CanMergeConvolutions (which only answers yes or no, and is called by every
// ValidateSchedule).
#include <ATen/core/Tensor.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace autograph {

// Why the convolutions cannot be merged ("" when they can), naming each by `label(i)`.
// paddings[i], stride and dilation have 1 or 2 entries (one entry stands for both dimensions).
std::string ConvolutionMergeConflict(const std::vector<at::Tensor>& weights,
                                     const std::vector<std::optional<at::Tensor>>& biases,
                                     const std::vector<int64_t>& stride,
                                     const std::vector<std::vector<int64_t>>& paddings,
                                     const std::vector<int64_t>& dilation,
                                     const std::function<std::string(size_t)>& label);

// A 1- or 2-entry parameter list as 2 entries; empty when it has another length.
std::vector<int64_t> TwoDimensional(const std::vector<int64_t>& values);

// The symmetric padding (2 entries, into *padding) of padding mode "valid" or "same" for a 4-D
// `weight` and 2-entry `dilation`; "" or why no symmetric padding reproduces it (another mode, or
// "same" with an odd total, which PyTorch pads one more at the end).
std::string PaddingOfMode(const std::string& mode, const at::Tensor& weight, const std::vector<int64_t>& dilation,
                          std::vector<int64_t>* padding);

}  // namespace autograph
