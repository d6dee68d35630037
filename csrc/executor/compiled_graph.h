#pragma once
// A TorchScript graph compiled for direct execution: every node resolved once to a
// torch::jit::Operation reading and writing slots of a value table, constants pre-filled. No
// interpreter on the hot path; nodes with blocks (prim::If, prim::Loop) and interpreter-only
// prims run as one opaque step through the TorchScript interpreter. Or an exported program's
// AtenGraph, each node a boxed dispatcher call (no TorchScript at all), its values the table's slots.
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

class AtenGraph;

class CompiledGraph {
 public:
  using Table = std::vector<c10::IValue>;
  // Called after each node with its inputs and outputs (used to record real shapes).
  using Observer = std::function<void(const torch::jit::Node* node, const std::vector<c10::IValue>& inputs,
                                      const std::vector<c10::IValue>& outputs)>;

  // `order` lists every node of graph's top-level block except prim::Constant, each once, in an
  // order that respects data dependences (the graph's own order, or a schedule's).
  // `full_float32`: every operator's allow_tf32 argument reads false (ExecutorOptions::full_float32).
  CompiledGraph(std::shared_ptr<torch::jit::Graph> graph, const std::vector<torch::jit::Node*>& order,
                bool full_float32 = false);
  // `order` lists every node of the AtenGraph once, in an order that respects data dependences.
  // Throws UnsupportedModelError when a node's operator is not registered or its arguments do not fit.
  CompiledGraph(std::shared_ptr<const AtenGraph> graph, const std::vector<int>& order);

  // Sequential run in `order`, releasing each intermediate after its last use. Thread-safe: each
  // call has its own value table. Throws InputError when the number of inputs is wrong or a node
  // fails on them (naming the node).
  std::vector<c10::IValue> Run(std::vector<c10::IValue> inputs, const Observer* observer = nullptr) const;

  // Building blocks for executors that run the steps in another arrangement.
  Table NewTable(std::vector<c10::IValue> inputs) const;  // checks the input count
  struct ReleasePlan;
  // Runs one step. `release`: the caller's release plan; where it clears an AtenGraph step's first
  // argument right after the step (writes_in_place) and nothing else holds that tensor, the step writes
  // its result into it (its in-place twin, aten_operation.h) instead of new memory.
  void RunStep(size_t step, Table& table, torch::jit::Stack& stack, const ReleasePlan* release = nullptr) const;
  std::vector<c10::IValue> Outputs(const Table& table) const;
  // When to clear each computed slot, given every step's group (steps that run in order on one
  // thread or stream) and phase (groups of one phase may run concurrently): right after its last
  // reader when all its readers are in one group, else after the last phase that reads it. Graph
  // inputs, outputs and constants are kept.
  struct ReleasePlan {
    std::vector<std::vector<int>> after_step, after_phase;
    // Per step: it has an in-place twin and its after_step clears the slot that twin writes.
    std::vector<bool> writes_in_place;
  };
  ReleasePlan PlanReleases(const std::vector<int>& group_of_step, const std::vector<int>& phase_of_step,
                           int num_phases) const;
  const std::vector<int>& step_inputs(size_t step) const { return steps_[step].inputs; }
  const std::vector<int>& step_outputs(size_t step) const { return steps_[step].outputs; }
  torch::jit::Node* step_node(size_t step) const { return steps_[step].node; }  // null for an AtenGraph
  int step_aten_node(size_t step) const { return steps_[step].aten_node; }      // -1 for TorchScript
  const std::shared_ptr<const AtenGraph>& aten_graph() const { return aten_graph_; }

  size_t num_inputs() const { return input_slots_.size(); }
  size_t num_steps() const { return steps_.size(); }
  size_t num_slots() const { return initial_table_.size(); }
  const std::shared_ptr<torch::jit::Graph>& graph() const { return graph_; }

 private:
  struct Step {
    mutable torch::jit::Operation operation;
    std::vector<int> inputs;   // slots pushed, in order
    std::vector<int> outputs;  // slots popped into
    torch::jit::Node* node;
    int aten_node = -1;  // the AtenGraph node instead
    std::function<void(torch::jit::Stack&)> in_place;  // its in-place twin, when it has one
    int in_place_slot = -1;                  // the slot that twin writes
  };
  bool MayWriteInPlace(const Step& step, const Table& table) const;
  std::string DescribeStep(const Step& step) const;

  std::shared_ptr<torch::jit::Graph> graph_;
  std::shared_ptr<const AtenGraph> aten_graph_;
  Table initial_table_;  // constants filled in, everything else None
  std::vector<bool> kept_;  // constants and graph outputs: never released
  std::vector<int> input_slots_;
  std::vector<int> output_slots_;
  std::vector<Step> steps_;
  ReleasePlan sequential_release_;
  void FinishConstruction();  // kept slots and the sequential release plan
};

}  // namespace autograph
