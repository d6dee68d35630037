#pragma once
// Graph substitutions on their own (the "TASO + JIT" baseline): the module is frozen and lowered,
// the substitutions that OptimizeOptions asks for are applied (merge_linears, regroup_convolutions,
// fold_conv_relu, fuse_attention), and the result is an ordinary TorchScript module run by TorchScript's own
// executor — no schedule, no streams, no stitching.
#include "autograph/optimize.h"

namespace autograph {

// The module with options' substitutions applied (optimize's rewrite registry, the graph
// substitutions alone, unmeasured), on options.device; it saves and loads like any module. report
// (optional) gets the substitution counts and decisions, and operators_before/after counted as optimize
// counts them (kernels launched). Throws as optimize does.
torch::jit::Module substitute(const torch::jit::Module& module, const OptimizeOptions& options,
                              OptimizeReport* report = nullptr);

}  // namespace autograph
