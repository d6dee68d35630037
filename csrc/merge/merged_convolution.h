#pragma once
// Merged convolution: several 2-D convolutions that read one input become one wider convolution
// (IOS's "merge" stage, TASO's sibling-conv merge). Output channels are concatenated, smaller
// kernels are zero-padded (centred) to the largest, and each original convolution's output is a
// channel slice of the merged one. MergeConvolutions and RunMergedConvolution work on tensors; the
// OpGraph part says which operators of an imported graph can be merged, from their merge candidates.
#include <ATen/core/Tensor.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/op_graph.h"

namespace autograph {

// Several convolutions on one input, as one. Built once (the executor: when a plan is made, from
// the frozen weights), run many times.
struct MergedConvolution {
  at::Tensor weight;  // out channels concatenated; smaller kernels zero-padded to the largest, centred
  at::Tensor bias;    // concatenated (zeros for convs without bias), or undefined when none had one
  std::vector<int64_t> stride, padding, dilation;  // padding of the merged (largest) kernel
  std::vector<int64_t> out_channels;               // per original conv, to split the output
};

// Merges convolutions with weights [out_i, in, kh_i, kw_i] (groups = 1) that share `stride` and
// `dilation` and have their own `paddings[i]` (2 values each). Throws Error saying which conv does
// not fit and why: fewer than 2 convs, mismatched list lengths, a weight that is not 4-D, different
// in-channels, dtype or device, a bias of the wrong shape, or a kernel parity or padding offset
// that would change the output. Merging is exact iff every conv has, per dimension, the same
// kernel-size parity and the same offset padding - dilation*(k-1)/2: then the zero taps added
// around a smaller kernel line up with the merged padding and multiply by exact zeros.
MergedConvolution MergeConvolutions(const std::vector<at::Tensor>& weights,
                                    const std::vector<std::optional<at::Tensor>>& biases, std::vector<int64_t> stride,
                                    const std::vector<std::vector<int64_t>>& paddings, std::vector<int64_t> dilation);

// One at::conv2d, then one channel slice per original conv: narrow views of the merged output on
// dim 1 (no copy; contiguous only when the batch is 1). Throws what at::conv2d throws.
std::vector<at::Tensor> RunMergedConvolution(const at::Tensor& input, const MergedConvolution& merged);

// Which operators of an OpGraph can be merged: classes of convolutions (aten::conv2d,
// aten::_convolution or aten::convolution; groups = 1, not transposed, 2-D, frozen weight and bias,
// constant stride/padding/dilation) reading the same input Value with the same stride, dilation,
// dtype, device, in-channels, kernel parity and padding offset, no two of a class connected by a
// path. Any subset of >= 2 ops of a class can form one Merge stage. Classes of >= 2 ops, each
// sorted by id, ordered by their first id.
std::vector<std::vector<int>> MergeableConvolutionClasses(const OpGraph& graph);

// Whether `op` (a schema name) is a convolution a merge may take: aten::conv2d, aten::_convolution_mode,
// aten::convolution or aten::_convolution.
bool IsMergeableConvolutionOp(const std::string& op);

// Whether `ops` (>= 2 distinct op ids) can run as one merged kernel; when not, *why says which op
// and why (e.g. "op 7 (aten::conv2d) reads another input than op 5").
bool CanMergeConvolutions(const OpGraph& graph, const std::vector<int>& ops, std::string* why = nullptr);

// The convolutions of `ops`, merged in the order given. Throws Error (with CanMergeConvolutions'
// reason) when they cannot be merged. The weights come from the graph's frozen constants, so the
// result is rebuilt from the graph wherever the graph is (after loading a Program, too).
MergedConvolution MergeConvolutionOps(const OpGraph& graph, const std::vector<int>& ops);

}  // namespace autograph
