#pragma once
// Lowering: a torch::jit::Module becomes one flat, frozen, functional forward graph.
#include <memory>

namespace torch::jit {
struct Graph;
struct Module;
}  // namespace torch::jit

namespace autograph {

// Clones the module, switches it to eval, freezes it (parameters become constants, methods are
// inlined), removes dropout, folds conv+batch_norm (and conv+add/mul, linear+batch_norm), turns
// list mutation functional (in-place tensor ops stay), then constant propagation, CSE and DCE —
// PyTorch's own passes. The returned graph has no `self` input: its inputs are forward's arguments.
// Throws UnsupportedModelError when forward still needs the module after freezing.
std::shared_ptr<torch::jit::Graph> LowerModule(const torch::jit::Module& module);

// The same passes on a graph that is already frozen (no `self`), for IR-level tests.
void LowerFrozenGraph(std::shared_ptr<torch::jit::Graph>& graph);

}  // namespace autograph
