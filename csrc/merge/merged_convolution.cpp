// MergeConvolutions and RunMergedConvolution: the ATen side of a Merge stage. The weights of
// convolutions that share an input are zero-padded (centred) to the largest kernel and
// concatenated along the output channels once; a run is one at::conv2d whose output is split back
// into the original convolutions' channels. Exactness: see convolution_merge_rules.cpp.
#include "merge/merged_convolution.h"

#include <ATen/ATen.h>

#include <algorithm>

#include "autograph/error.h"
#include "merge/convolution_merge_rules.h"

namespace autograph {

MergedConvolution MergeConvolutions(const std::vector<at::Tensor>& weights,
                                    const std::vector<std::optional<at::Tensor>>& biases, std::vector<int64_t> stride,
                                    const std::vector<std::vector<int64_t>>& paddings, std::vector<int64_t> dilation) {
  const std::string conflict = ConvolutionMergeConflict(weights, biases, stride, paddings, dilation,
                                                        [](size_t i) { return "conv " + std::to_string(i); });
  if (!conflict.empty()) throw Error("cannot merge the convolutions: " + conflict);

  MergedConvolution merged;
  merged.stride = TwoDimensional(stride);
  merged.dilation = TwoDimensional(dilation);
  int64_t kernel[2] = {0, 0};
  for (const at::Tensor& w : weights) {
    kernel[0] = std::max(kernel[0], w.size(2));
    kernel[1] = std::max(kernel[1], w.size(3));
  }
  // Any conv gives the merged padding: all have the same offset (checked above).
  const std::vector<int64_t> first_padding = TwoDimensional(paddings[0]);
  for (int dim = 0; dim < 2; ++dim)
    merged.padding.push_back(first_padding[dim] + merged.dilation[dim] * (kernel[dim] - weights[0].size(2 + dim)) / 2);

  const bool any_bias = std::any_of(biases.begin(), biases.end(),
                                    [](const std::optional<at::Tensor>& b) { return b.has_value() && b->defined(); });
  std::vector<at::Tensor> padded, concatenated_bias;
  for (size_t i = 0; i < weights.size(); ++i) {
    const at::Tensor& w = weights[i];
    const int64_t top = (kernel[0] - w.size(2)) / 2, left = (kernel[1] - w.size(3)) / 2;
    // constant_pad_nd pads the last dimension first: {left, right, top, bottom}.
    padded.push_back(top == 0 && left == 0 ? w : at::constant_pad_nd(w, {left, left, top, top}, 0));
    merged.out_channels.push_back(w.size(0));
    if (any_bias) {
      const bool has = biases[i].has_value() && biases[i]->defined();
      concatenated_bias.push_back(has ? *biases[i] : at::zeros({w.size(0)}, w.options()));
    }
  }
  merged.weight = at::cat(padded, 0).contiguous();
  if (any_bias) merged.bias = at::cat(concatenated_bias, 0).contiguous();
  return merged;
}

std::vector<at::Tensor> RunMergedConvolution(const at::Tensor& input, const MergedConvolution& merged) {
  const at::Tensor output =
      at::conv2d(input, merged.weight, merged.bias, merged.stride, merged.padding, merged.dilation, /*groups=*/1);
  const int64_t channel_dim = output.dim() == 3 ? 0 : 1;  // at::conv2d also takes unbatched [C, H, W] input
  std::vector<at::Tensor> slices;
  slices.reserve(merged.out_channels.size());
  int64_t start = 0;
  for (int64_t channels : merged.out_channels) {
    slices.push_back(output.narrow(channel_dim, start, channels));
    start += channels;
  }
  return slices;
}

}  // namespace autograph
