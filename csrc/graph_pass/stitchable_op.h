#pragma once
// Which TorchScript operators a stitch program can express, and their statements: elementwise
// arithmetic and activations, softmax / log_softmax / layer_norm / mean / sum / amax / amin over
// trailing dims. Shapes come from a run on example inputs.
#include <ATen/core/Tensor.h>

#include <functional>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "stitch/stitch_program.h"

namespace torch::jit {
struct Node;
struct Value;
}  // namespace torch::jit

namespace autograph {

// What the planner needs to know of a stitchable node.
struct StitchableOp {
  std::vector<int64_t> domain;  // iteration domain: output shape (elementwise) or input shape (reductions)
  int split = -1;               // domain dims before the reduced ones; -1 for elementwise ops
  int weight = 1;               // statements it adds
  bool row_output = false;      // its output is a row value (a reduction over trailing dims)
  bool keepdim = true;          // row output keeps the reduced dims as 1s (else no group member may read it)
  std::vector<torch::jit::Value*> tensor_inputs;  // inputs read as tensors (the rest are constants)
};

// Whether operators of this kind (a functional aten kind such as "aten::relu") can be stitched at all;
// AnalyzeStitchable decides for one node.
bool IsStitchableKind(const std::string& kind);

// `value_of` gives the recorded tensor of a value (undefined tensor when not a tensor). Returns
// nothing when the node cannot be stitched: unsupported op or argument (non-constant scalar,
// rounding mode, a dim other than the trailing ones, dtype change, integer tensors, ...).
std::optional<StitchableOp> AnalyzeStitchable(const torch::jit::Node* node,
                                              const std::function<at::Tensor(const torch::jit::Value*)>& value_of);

// Appends `node`'s statements to `program`; `value_id` maps values already in the program (group
// members' outputs and tensor inputs) to their value ids; returns the id of the node's output.
// `input_id(value)` adds a tensor input on first use and returns its value id.
int EmitStitchStatements(const torch::jit::Node* node, StitchProgram* program,
                         const std::function<int(torch::jit::Value*)>& operand_id);

}  // namespace autograph
