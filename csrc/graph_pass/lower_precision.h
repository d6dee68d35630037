#pragma once
// A lowered graph's matrix products and convolutions computed in a precision below float32, as
// autocast computes them: each such operator's float32 operands cast to the lower dtype (a constant
// weight stored in it once), its result cast back to float32; everything else (normalizations,
// softmax, residual sums, reductions) stays in float32, where rounding would add up. The graph's
// inputs and outputs keep their dtypes.
#include <c10/core/ScalarType.h>

#include <memory>
#include <string>
#include <vector>

namespace torch::jit {
struct Graph;
struct Node;
}  // namespace torch::jit

namespace autograph {

class GraphValues;

// The dtype an option precision lowers to ("bf16", "fp16"); Error for any other name.
c10::ScalarType LoweredDtype(const std::string& precision);

// The top-level operators the rewrite below may lower, in graph order: matrix products and
// convolutions (autocast's lower-precision list) that returned a float32 tensor and read float32
// tensors alone. A copy of the graph (Graph::copy, GraphValues::ForCopy) lists its own in the same order.
std::vector<torch::jit::Node*> LowerableOperators(torch::jit::Graph& graph, const GraphValues& values);

// Rewrites `graph` in place (`values`: its record on the example inputs, which the rewrite leaves
// stale); returns how many operators now compute in `dtype`: every lowerable one, or where `chosen`
// is given those whose position in LowerableOperators it marks. A non-constant operand read by several
// lowered operators is cast once, unless something writes it (or an alias) in place: then before each
// reader.
int LowerMatmulsAndConvolutions(std::shared_ptr<torch::jit::Graph>& graph, const GraphValues& values,
                                c10::ScalarType dtype, const std::vector<bool>* chosen = nullptr);

}  // namespace autograph
