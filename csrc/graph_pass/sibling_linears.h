#pragma once
// Linears that read one input and could become one wider GEMM: what the MergeSiblingLinears
// substitution rewrites, and what a Merge stage of the search runs (mergeable_linears.cpp).
#include <torch/csrc/jit/ir/ir.h>

#include <optional>
#include <vector>

namespace autograph {

struct SiblingLinear {
  torch::jit::Node* node;
  at::Tensor weight, bias;  // bias undefined when None
};

// `node` as a linear of `x` (its input 0) that can join a merge: a top-level aten::linear with a
// constant 2-d weight and a constant 1-d or None bias, whose output, and any view of it, nothing
// writes in place (the output may become a slice of a wider one, which may or may not be copied).
std::optional<SiblingLinear> AsSiblingLinear(torch::jit::Node* node, const torch::jit::Value* x,
                                             const torch::jit::Graph& graph);

// Groups of >= 2 siblings that one GEMM can compute (same input, weight dtype, device, in-features,
// and bias or not when `same_bias` — a merged kernel fills missing biases with zeros, the
// substitution does not), in graph order of their inputs.
std::vector<std::vector<SiblingLinear>> SiblingLinearGroups(torch::jit::Graph& graph, bool same_bias = true);

// view(slice, shape) -> reshape(slice, shape), view_as -> reshape_as for every view of `slice`: the
// same result on a fresh output, and also defined on the strided slices of a merged output.
void ViewsToReshapes(torch::jit::Graph& graph, torch::jit::Value* slice);

}  // namespace autograph
