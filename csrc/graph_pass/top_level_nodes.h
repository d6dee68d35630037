#pragma once
// The top-level nodes of a TorchScript graph as the passes see them: graph order without constants,
// what each reads (nested blocks included), and the order that in-place writes and side effects impose. Shared by
// ImportOpGraph and StitchMemoryBoundOps, so both order readers around writes alike.
#include <memory>
#include <unordered_map>
#include <utility>
#include <vector>

namespace torch::jit {
struct Block;
struct Graph;
struct Node;
struct Value;
}  // namespace torch::jit

namespace autograph {

struct TopLevelNodes {
  std::vector<torch::jit::Node*> order;                      // graph order, prim::Constant left out
  std::unordered_map<const torch::jit::Node*, int> position;  // index in `order`
};
TopLevelNodes TopLevelNodesOf(torch::jit::Graph& graph);

// The top-level node that a (possibly nested) node belongs to.
torch::jit::Node* TopLevel(torch::jit::Node* n, const torch::jit::Block* top);

// Values read by a node or by anything nested in its blocks.
void ReadValues(torch::jit::Node* n, std::vector<torch::jit::Value*>* out);

// An op (aten or custom) whose schema writes one of its inputs (relu_, add_, copy_, Tensor(a!), ...).
bool WritesAnInput(const torch::jit::Node* node);

// Pairs (earlier, later) of positions in `order`: a writer and a node that reads what it may write
// (alias analysis); the reader must stay on its side of the write.
std::vector<std::pair<int, int>> InPlaceOrderPairs(const std::shared_ptr<torch::jit::Graph>& graph,
                                                   const std::vector<torch::jit::Node*>& order);

// A node, or one nested in its blocks, whose effects other than its outputs must keep their place:
// prim::Print, attribute writes, custom ops of conservative alias analysis (their schema tells
// nothing of what they touch), ... Raising and warnings are left out.
bool HasOrderedSideEffects(torch::jit::Node* node);

// Such nodes are barriers: pairs (earlier, later) putting every other node of `order` on its side of
// each, so whatever they print, record or touch happens where TorchScript would have done it.
std::vector<std::pair<int, int>> SideEffectOrderPairs(const std::vector<torch::jit::Node*>& order);

}  // namespace autograph
