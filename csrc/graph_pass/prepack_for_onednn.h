#pragma once
// Substitution for CPU targets: what torch.jit.optimize_for_inference does to a frozen graph, so an
// optimized module starts where jit_frozen is. 2-d and 3-d convolutions with constant float32
// weights run in oneDNN's blocked layout (prim::mkldnn_convolution) with their weights reordered
// once, here, instead of on every call; the memory-bound operators between them that oneDNN runs as
// fast as ATen (relu, add, mul, max_pool, hardswish, ...) stay in that layout, so conversions
// (aten::to_mkldnn / aten::to_dense) sit only at the borders of each such region. Linears with
// constant weights read a weight transposed once (matmul + add), as PyTorch 2.11's pass does; it
// starts oneDNN regions at convolutions only.
// The prepacked weights are ordinary prim::Constant nodes holding oneDNN tensors, which the
// executor, the import and the program's serialization (SerializeGraph) handle like any constant.
#include <memory>

namespace torch::jit {
struct Graph;
}  // namespace torch::jit

namespace autograph {

// Rewrites a lowered (frozen) graph in place; returns the operators that now read a prepacked
// (oneDNN or transposed) weight, 0 when none does (the pass may still have canonicalized constant
// lists) or PyTorch was built without oneDNN.
int PrepackForOneDnn(std::shared_ptr<torch::jit::Graph>& graph);

}  // namespace autograph
