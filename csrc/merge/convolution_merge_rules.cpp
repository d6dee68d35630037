// The rules that make a merged convolution exact. Output position o of a convolution with kernel
// size k, padding p, stride s and dilation d reads input positions o*s - p + d*j for the taps
// j = 0..k-1. A kernel zero-padded by t taps on each side to size K = k + 2t, with padding P, reads
// o*s - P + d*(j + t) at its original taps: the same positions iff P = p + d*t, i.e. iff
// P - d*(K-1)/2 = p - d*(k-1)/2. So every conv must have the same kernel-size parity (t is whole)
// and the same offset p - d*(k-1)/2 per dimension; then the output sizes agree too, and the extra
// taps multiply exact zeros. Compared as 2p - d*(k-1), which stays integral for even kernels.
#include "merge/convolution_merge_rules.h"

#include <c10/core/ScalarType.h>

#include <sstream>

namespace autograph {

std::vector<int64_t> TwoDimensional(const std::vector<int64_t>& values) {
  if (values.size() == 1) return {values[0], values[0]};
  if (values.size() == 2) return values;
  return {};
}

std::string PaddingOfMode(const std::string& mode, const at::Tensor& weight, const std::vector<int64_t>& dilation,
                          std::vector<int64_t>* padding) {
  padding->clear();
  if (mode == "valid") {
    *padding = {0, 0};
    return "";
  }
  if (mode != "same") return "has padding='" + mode + "'; expected 'same' or 'valid'";
  // PyTorch pads d*(k-1) in total, the extra one at the end: symmetric only when that is even.
  for (int dim = 0; dim < 2; ++dim) {
    const int64_t total = dilation[dim] * (weight.size(2 + dim) - 1);
    if (total % 2 != 0) {
      padding->clear();
      return "has padding='same' with a kernel that pads unevenly (dilation*(k-1) = " + std::to_string(total) +
             "), which no symmetric merged padding reproduces";
    }
    padding->push_back(total / 2);
  }
  return "";
}

namespace {

std::string List(const std::vector<int64_t>& values) {
  std::ostringstream out;
  out << "[";
  for (size_t i = 0; i < values.size(); ++i) out << (i ? ", " : "") << values[i];
  out << "]";
  return out.str();
}

std::string Sizes(const at::Tensor& t) { return List(t.sizes().vec()); }

}  // namespace

std::string ConvolutionMergeConflict(const std::vector<at::Tensor>& weights,
                                     const std::vector<std::optional<at::Tensor>>& biases,
                                     const std::vector<int64_t>& stride,
                                     const std::vector<std::vector<int64_t>>& paddings,
                                     const std::vector<int64_t>& dilation,
                                     const std::function<std::string(size_t)>& label) {
  if (weights.empty()) return "there are no convolutions to merge";
  if (biases.size() != weights.size() || paddings.size() != weights.size()) {
    return std::to_string(weights.size()) + " weights come with " + std::to_string(biases.size()) + " biases and " +
           std::to_string(paddings.size()) + " paddings; give one of each per convolution";
  }
  const std::vector<int64_t> s = TwoDimensional(stride), d = TwoDimensional(dilation);
  if (s.empty() || s[0] < 1 || s[1] < 1) return "stride " + List(stride) + " is not 1 or 2 positive values";
  if (d.empty() || d[0] < 1 || d[1] < 1) return "dilation " + List(dilation) + " is not 1 or 2 positive values";

  const at::Tensor& first = weights[0];
  std::vector<int64_t> first_offset, first_parity;
  for (size_t i = 0; i < weights.size(); ++i) {
    const at::Tensor& w = weights[i];
    const std::string who = label(i);
    if (!w.defined()) return who + " has an undefined weight";
    if (w.dim() != 4) {
      return who + " has a weight of shape " + Sizes(w) +
             "; only 2-D convolutions (weights [out, in, kh, kw]) can be merged";
    }
    if (w.size(0) < 1 || w.size(2) < 1 || w.size(3) < 1) return who + " has an empty weight of shape " + Sizes(w);
    if (w.size(1) != first.size(1)) {
      return who + " has " + std::to_string(w.size(1)) + " in-channels, " + label(0) + " has " +
             std::to_string(first.size(1)) + "; merged convolutions read one input with groups = 1";
    }
    if (w.scalar_type() != first.scalar_type()) {
      return who + " has dtype " + c10::toString(w.scalar_type()) + ", " + label(0) + " has " +
             c10::toString(first.scalar_type());
    }
    if (w.device() != first.device()) {
      return who + " is on " + w.device().str() + ", " + label(0) + " is on " + first.device().str();
    }
    if (biases[i].has_value() && biases[i]->defined()) {
      const at::Tensor& b = *biases[i];
      if (b.dim() != 1 || b.size(0) != w.size(0)) {
        return who + " has a bias of shape " + Sizes(b) + " for " + std::to_string(w.size(0)) + " out-channels";
      }
      if (b.scalar_type() != w.scalar_type() || b.device() != w.device()) {
        return who + " has a bias of dtype " + c10::toString(b.scalar_type()) + " on " + b.device().str() +
               " for a weight of dtype " + c10::toString(w.scalar_type()) + " on " + w.device().str();
      }
    }
    const std::vector<int64_t> p = TwoDimensional(paddings[i]);
    if (p.empty() || p[0] < 0 || p[1] < 0) return who + " has padding " + List(paddings[i]) + ", not 1 or 2 values >= 0";
    std::vector<int64_t> offset, parity;
    for (int dim = 0; dim < 2; ++dim) {
      const int64_t k = w.size(2 + dim);
      offset.push_back(2 * p[dim] - d[dim] * (k - 1));
      parity.push_back(k % 2);
    }
    if (i == 0) {
      first_offset = offset;
      first_parity = parity;
      continue;
    }
    for (int dim = 0; dim < 2; ++dim) {
      const char* name = dim == 0 ? "height" : "width";
      if (parity[dim] != first_parity[dim]) {
        return who + " has a kernel " + Sizes(w) + " whose " + name + " differs in parity from " + label(0) + "'s " +
               Sizes(first) + "; a kernel can only be zero-padded evenly (centred) to the larger one";
      }
      if (offset[dim] != first_offset[dim]) {
        return who + " has kernel " + Sizes(w) + " with padding " + List(p) + ", which places its " + name +
               " taps differently from " + label(0) + " (kernel " + Sizes(first) + ", padding " +
               List(TwoDimensional(paddings[0])) + "): merging would change its output; the offset padding - " +
               "dilation*(k-1)/2 must agree";
      }
    }
  }
  return "";
}

}  // namespace autograph
