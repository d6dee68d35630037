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

// Readies the same siblings for Merge stages that the search may choose instead (merged_linear.h),
// without changing what any node computes: each group's weights (and biases, when all have one) are
// concatenated once — once per distinct set of weight tensors, so an unrolled RNN's steps share it —
// and every sibling reads its rows as a view, so a merged kernel reads the very same memory as the
// linears it replaces (MergeLinears uses adjacent views in place): no second copy of the weights,
// whichever linears the search merges. Views of their outputs become reshapes — the same result on
// the linears' own outputs, still defined on the strided slices of a merged one. Returns the
// siblings prepared.
int PrepareSiblingLinearsForMerging(std::shared_ptr<torch::jit::Graph>& graph);

}  // namespace autograph
