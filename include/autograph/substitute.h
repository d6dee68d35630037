#pragma once
// Graph substitutions on their own (the "TASO + JIT" baseline): the module is frozen and lowered,
// the substitutions that OptimizeOptions asks for are applied (merge_linears, regroup_convolutions,
// fold_conv_relu, fuse_attention), and the result is an ordinary TorchScript module run by TorchScript's own
// executor — no schedule, no streams, no stitching.
#include <memory>
#include <vector>

#include "autograph/optimize.h"

namespace torch::jit {
struct Graph;
}

namespace autograph {

struct SubstitutionCounts {
  int linears_merged = 0;
  int convolutions_regrouped = 0;
  int convolutions_folded = 0;
  int attentions_fused = 0;
  int ops_folded = 0;  // relu / add kernels the folded convolutions absorbed
};

// Applies options' substitutions to a lowered graph in place, on `inputs` already on options.device
// (the regrouping times candidates on them). The cuDNN fold only for CUDA devices (no CPU kernel).
SubstitutionCounts ApplySubstitutions(std::shared_ptr<torch::jit::Graph>& lowered, const std::vector<c10::IValue>& inputs,
                                      const OptimizeOptions& options);

// The module with options' substitutions applied, on options.device; it saves and loads like any
// module. report (optional) gets the substitution counts, and operators_before/after as the aten nodes
// of the lowered graph before and after (a rough count: shape queries included). Throws as
// optimize does.
torch::jit::Module substitute(const torch::jit::Module& module, const OptimizeOptions& options,
                              OptimizeReport* report = nullptr);

}  // namespace autograph
