#pragma once
// The kernel of a Merge stage: sibling convolutions as one merged convolution, or sibling linears
// as one merged linear (merged_convolution.h, merged_linear.h), whichever its operators are. The
// search, the schedule's validation and the executor see merges only through this header, so a
// new kind of merge is added here.
#include <ATen/core/Tensor.h>

#include <string>
#include <variant>
#include <vector>

#include "core/op_graph.h"
#include "merge/merged_convolution.h"
#include "merge/merged_linear.h"

namespace autograph {

using MergedKernel = std::variant<MergedConvolution, MergedLinear>;

// Every class of operators any >= 2 of which can form one Merge stage: the convolution classes and
// the linear classes, each sorted by id, ordered by their first id.
std::vector<std::vector<int>> MergeableClasses(const OpGraph& graph);

// Whether `ops` can run as one merged kernel (all convolutions or all linears); when not, *why says
// which op and why.
bool CanMergeOps(const OpGraph& graph, const std::vector<int>& ops, std::string* why = nullptr);

// The merged kernel of `ops`, built from their merge candidates' frozen weights. Throws Error when they
// cannot be merged.
MergedKernel MergeOps(const OpGraph& graph, const std::vector<int>& ops);

// What the merged kernel of `ops` is made of: their weights and biases (by identity) and convolution
// parameters. Equal keys give equal kernels, so a model that applies the same layers many times (an
// unrolled RNN) can build one merged weight and share it, instead of one copy per use, each read
// from memory rather than from cache.
std::string MergedKernelKey(const OpGraph& graph, const std::vector<int>& ops);

// `ops` ordered by the address of each one's weight (then id): merges of the same weights come out
// alike whatever their order, and sibling linears whose weights are row views of one tensor
// (PrepareSiblingLinearsForMerging) in row order, so their merged weight is that tensor.
std::vector<int> CanonicalMergeOrder(const OpGraph& graph, const std::vector<int>& ops);

// Runs it on `input`: one output per original operator, in the order of `ops`.
std::vector<at::Tensor> RunMergedKernel(const at::Tensor& input, const MergedKernel& kernel);

// The device its weights are on.
c10::Device MergedKernelDevice(const MergedKernel& kernel);

}  // namespace autograph
