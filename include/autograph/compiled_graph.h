#pragma once
// A TorchScript graph compiled for direct execution: every node resolved once to a
// torch::jit::Operation reading and writing slots of a value table, constants pre-filled, each
// intermediate released after its last use. No interpreter on the hot path; nodes with blocks
// (prim::If, prim::Loop) run as one opaque step through the TorchScript interpreter.
#include <ATen/core/ivalue.h>
#include <ATen/core/stack.h>

#include <functional>
#include <memory>
#include <vector>

namespace torch::jit {
struct Graph;
struct Node;
}  // namespace torch::jit

namespace autograph {

class CompiledGraph {
 public:
  // Called after each node with its inputs and outputs (used to record real shapes).
  using Observer = std::function<void(const torch::jit::Node* node, const std::vector<c10::IValue>& inputs,
                                      const std::vector<c10::IValue>& outputs)>;

  // `order` lists every node of graph's top-level block except prim::Constant, each once, in an
  // order that respects data dependences (the graph's own order, or an OpGraph's).
  CompiledGraph(std::shared_ptr<torch::jit::Graph> graph, const std::vector<torch::jit::Node*>& order);

  // Thread-safe: each call has its own value table. Throws autograph::InputError when the number of
  // inputs is wrong or a node fails on them (naming the node).
  std::vector<c10::IValue> Run(std::vector<c10::IValue> inputs, const Observer* observer = nullptr) const;

  size_t num_inputs() const { return input_slots_.size(); }
  size_t num_steps() const { return steps_.size(); }

 private:
  struct Step {
    mutable torch::jit::Operation operation;
    std::vector<int> inputs;   // slots pushed, in order
    std::vector<int> outputs;  // slots popped into
    std::vector<int> release;  // slots whose last use is this step
    torch::jit::Node* node;
  };

  std::shared_ptr<torch::jit::Graph> graph_;
  std::vector<c10::IValue> initial_table_;  // constants filled in, everything else None
  std::vector<int> input_slots_;
  std::vector<int> output_slots_;
  std::vector<Step> steps_;
};

}  // namespace autograph
