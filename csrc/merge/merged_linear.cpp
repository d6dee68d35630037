// MergeLinears and RunMergedLinear: the ATen side of a Merge stage of linears.
#include "merge/merged_linear.h"

#include <ATen/ATen.h>

#include "autograph/error.h"

namespace autograph {

namespace {

// When the parts are contiguous row ranges that follow each other in one storage (the views that
// PrepareSiblingLinearsForMerging gives sibling linears), the one tensor they make up, as a view:
// the merged kernel then reads the same memory as the separate linears.
std::optional<at::Tensor> Adjacent(const std::vector<at::Tensor>& parts) {
  const at::Tensor& first = parts[0];
  int64_t rows = 0;
  for (const at::Tensor& p : parts) {
    if (!p.is_contiguous() || !p.storage().is_alias_of(first.storage()) || p.dim() != first.dim() ||
        p.storage_offset() != first.storage_offset() + rows * (first.numel() / std::max<int64_t>(first.size(0), 1)))
      return std::nullopt;
    for (int64_t d = 1; d < p.dim(); ++d)
      if (p.size(d) != first.size(d)) return std::nullopt;
    rows += p.size(0);
  }
  std::vector<int64_t> sizes = first.sizes().vec();
  sizes[0] = rows;
  return first.as_strided(sizes, first.strides(), first.storage_offset());
}

}  // namespace

MergedLinear MergeLinears(const std::vector<at::Tensor>& weights, const std::vector<std::optional<at::Tensor>>& biases) {
  auto fail = [](const std::string& what) { throw Error("cannot merge the linears: " + what); };
  if (weights.size() < 2) fail("a merged linear needs at least 2 weights, got " + std::to_string(weights.size()));
  if (biases.size() != weights.size())
    fail(std::to_string(weights.size()) + " weights but " + std::to_string(biases.size()) + " biases; give one per weight (or None)");
  const at::Tensor& first = weights[0];
  bool any_bias = false;
  MergedLinear merged;
  for (size_t i = 0; i < weights.size(); ++i) {
    const at::Tensor& w = weights[i];
    const std::string who = "linear " + std::to_string(i);
    if (w.dim() != 2) fail(who + " has a " + std::to_string(w.dim()) + "-D weight; expected [out, in]");
    if (w.size(1) != first.size(1))
      fail(who + " takes " + std::to_string(w.size(1)) + " in-features, linear 0 takes " + std::to_string(first.size(1)));
    if (w.scalar_type() != first.scalar_type() || w.device() != first.device())
      fail(who + " has a " + std::string(c10::toString(w.scalar_type())) + " weight on " + w.device().str() +
           ", linear 0 a " + c10::toString(first.scalar_type()) + " one on " + first.device().str());
    if (biases[i]) {
      const at::Tensor& b = *biases[i];
      if (b.dim() != 1 || b.size(0) != w.size(0) || b.scalar_type() != w.scalar_type() || b.device() != w.device())
        fail(who + " has a bias of shape " + c10::str(b.sizes()) + " (" + c10::toString(b.scalar_type()) + ", " +
             b.device().str() + "); expected [" + std::to_string(w.size(0)) + "] like its weight");
      any_bias = true;
    }
    merged.out_features.push_back(w.size(0));
  }
  merged.weight = Adjacent(weights).value_or(at::cat(weights, 0));
  if (any_bias) {
    std::vector<at::Tensor> parts;
    for (size_t i = 0; i < weights.size(); ++i)
      parts.push_back(biases[i] ? *biases[i] : at::zeros({weights[i].size(0)}, first.options()));
    merged.bias = Adjacent(parts).value_or(at::cat(parts, 0));
  }
  return merged;
}

std::vector<at::Tensor> RunMergedLinear(const at::Tensor& input, const MergedLinear& merged) {
  const at::Tensor wide = at::linear(input, merged.weight, merged.bias.defined() ? std::optional<at::Tensor>(merged.bias) : std::nullopt);
  return wide.split_with_sizes(merged.out_features, -1);
}

}  // namespace autograph
