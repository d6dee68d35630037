#pragma once
// Substitution: attention written out op by op — matmul(Q, K^T), scaled by a constant (div or
// mul), an optional additive mask, softmax over the last dimension, matmul with V — becomes one
// aten::scaled_dot_product_attention, which computes the same softmax(Q K^T * scale + mask) V in
// one fused kernel (flash / memory-efficient attention on CUDA, flash attention on CPU): the
// scores never reach memory, and the scale, mask add and softmax kernels are gone. Its output is
// laid out [batch, L, heads, E] underneath, so the usual permute + reshape back to [batch, L,
// heads*E] becomes a view instead of a copy. Numerically the same sums in another order (online
// softmax): within float rounding.
#include <memory>
#include <vector>

#include <ATen/core/ivalue.h>

#include "graph_pass/graph_values.h"

namespace torch::jit {
struct Graph;
}  // namespace torch::jit

namespace autograph {

// Rewrites the top-level block of a lowered graph in place and returns the attentions fused. The
// intermediate values (scores, probabilities) must have no other readers; on the one run on
// `example_inputs` that checks shapes, Q, K and V must be 4-D ([batch, heads, L, E], the same batch
// and heads) of one floating dtype, and the mask (added after scaling, alpha 1) of that dtype and
// broadcastable to the scores. A bool mask is not fused: added, it counts 0 / 1, while the fused
// kernel would read it as keep / drop.
int FuseScaledDotProductAttention(std::shared_ptr<torch::jit::Graph>& graph,
                                  const std::vector<c10::IValue>& example_inputs);
// The same from the recorded run of `graph` (no run of its own).
int FuseScaledDotProductAttention(std::shared_ptr<torch::jit::Graph>& graph, const GraphValues& values);

}  // namespace autograph
