#pragma once
// Merged linear: several linears (y_i = x W_i^T + b_i) that read one input become one wider GEMM
// over the concatenated weights, its output split back along the last dimension (views, no copy):
// a Merge stage of the search (BERT's Q, K, V), whose alternative is the same GEMMs concurrently
// on streams. Each output element is the same dot product; only the GEMM's blocking may differ.
// MergeLinears and RunMergedLinear work on tensors; the OpGraph part says which operators of an
// imported graph can be merged, from their merge candidates.
#include <ATen/core/Tensor.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/op_graph.h"

namespace autograph {

struct MergedLinear {
  at::Tensor weight;                  // [sum of out_i, in]
  at::Tensor bias;                    // concatenated (zeros for linears without one), undefined when none had one
  std::vector<int64_t> out_features;  // per original linear, to split the output
};

// Merges linears with weights [out_i, in] and optional biases [out_i]. Throws Error saying which one
// does not fit: fewer than 2, mismatched list lengths, a weight that is not 2-D, another in-features,
// dtype or device, a bias of the wrong shape, dtype or device.
MergedLinear MergeLinears(const std::vector<at::Tensor>& weights, const std::vector<std::optional<at::Tensor>>& biases);

// One at::linear, then one slice of the last dimension per original linear (strided views).
std::vector<at::Tensor> RunMergedLinear(const at::Tensor& input, const MergedLinear& merged);

// Classes of aten::linear operators that can run as one merged linear: they read the same input
// Value, have frozen 2-D weights (and frozen or no biases) of one dtype, device and in-features, no
// reader writes their outputs in place (an output becomes a slice), and no two are connected by a
// path. Classes of >= 2 ops, each sorted by id, ordered by their first id.
std::vector<std::vector<int>> MergeableLinearClasses(const OpGraph& graph);

// Whether `ops` can run as one merged linear; when not, *why says which op and why.
bool CanMergeLinears(const OpGraph& graph, const std::vector<int>& ops, std::string* why = nullptr);

// The linears of `ops`, merged in the order given, from the graph's frozen constants. Throws Error
// with CanMergeLinears' reason when they cannot be merged.
MergedLinear MergeLinearOps(const OpGraph& graph, const std::vector<int>& ops);

}  // namespace autograph
