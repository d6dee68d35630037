#pragma once
// Substitution: aten::linear nodes that read the same input with constant weights of one dtype,
// device and input width (BERT's Q, K and V projections) become one linear over the concatenated
// weights, whose output is split back into the original outputs (views, no copy). One wider GEMM
// launches once instead of several narrow ones. Numerically each output is the same dot products,
// only the GEMM's blocking may differ.
#include <memory>

namespace torch::jit {
struct Graph;
}  // namespace torch::jit

namespace autograph {

// Rewrites the top-level block of a frozen graph in place; returns how many linears were merged
// away (a group of k siblings counts k - 1). The split slices are not contiguous, so views of them
// become reshapes (BERT splits heads with view); a sibling is left alone when its output, or a view
// of it, is written in place.
int MergeSiblingLinears(std::shared_ptr<torch::jit::Graph>& graph);

// Readies the same siblings for a Merge stage that the search may choose instead (merged_linear.h):
// views of their outputs become reshapes — the same result on the linears' own outputs, and still
// defined on the strided slices of a merged one. Nothing else changes; returns the views rewritten.
int ReshapeViewsOfSiblingLinears(std::shared_ptr<torch::jit::Graph>& graph);

}  // namespace autograph
