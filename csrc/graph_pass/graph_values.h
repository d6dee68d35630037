#pragma once
// One run of a graph on the example inputs, kept: every graph input's and top-level node output's
// value, and what each node was called with. The driver records a graph once per graph state and
// every pass that needs shapes, dtypes, layouts or data to time on reads them from here instead of
// running the graph again.
#include <ATen/core/ivalue.h>

#include <memory>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace torch::jit {
struct Graph;
struct Node;
struct Value;
}  // namespace torch::jit

namespace autograph {

// Graph inputs and the outputs of every top-level node (constants are read from the graph).
using ValueRecord = std::unordered_map<const torch::jit::Value*, c10::IValue>;

class GraphValues {
 public:
  // Runs `graph` once, top-level nodes in graph order, without autograd, and keeps every value
  // alive (a tensor written in place later in the run shows the write: same shape and dtype).
  // Throws InputError when the inputs do not fit the graph or a node fails on them.
  static GraphValues Record(std::shared_ptr<torch::jit::Graph> graph, std::vector<c10::IValue> inputs);

  // The same record for `copy`, a graph()->copy() not changed since (Graph::copy keeps the order of
  // inputs, nodes and outputs, so values match by position); no run. Throws Error when the two
  // graphs differ in shape.
  GraphValues ForCopy(std::shared_ptr<torch::jit::Graph> copy) const;

  // Whether the record still describes `graph` as it is now: the same top-level nodes (same objects,
  // kinds, and input and output values by their unique ids, which a graph never reuses) in the same
  // order. A pass that replaced, rewired or added a node makes it false: record the graph again.
  // (Attributes changed in place are not seen; no pass here does that.)
  bool Fits(const torch::jit::Graph& graph) const;
  // Throws Error naming `who` when the record does not fit `graph` (a driver's mistake).
  void CheckFits(const torch::jit::Graph& graph, const std::string& who) const;

  const std::shared_ptr<torch::jit::Graph>& graph() const { return graph_; }
  const std::vector<c10::IValue>& inputs() const { return inputs_; }    // the example inputs
  const std::vector<c10::IValue>& outputs() const { return outputs_; }  // what the graph returned
  const ValueRecord& values() const { return values_; }

  // A graph input's or top-level node output's value; nullptr for constants, values inside blocks
  // and values of nodes inserted after the run.
  const c10::IValue* Find(const torch::jit::Value* v) const;
  // The recorded tensor, or a constant's; undefined for anything else.
  at::Tensor TensorOf(const torch::jit::Value* v) const;
  // The inputs a top-level node was called with; nullptr for nodes not in the run.
  const std::vector<c10::IValue>* InputsOf(const torch::jit::Node* n) const;

 private:
  explicit GraphValues(std::shared_ptr<torch::jit::Graph> graph) : graph_(std::move(graph)) {}  // Record, ForCopy

  struct NodeStamp {
    const torch::jit::Node* node;
    std::string kind;
    std::vector<size_t> inputs, outputs;  // Value::unique()
    bool operator==(const NodeStamp& o) const {
      return node == o.node && kind == o.kind && inputs == o.inputs && outputs == o.outputs;
    }
  };
  static std::vector<NodeStamp> StampsOf(const torch::jit::Graph& graph);

  std::vector<NodeStamp> stamps_;  // the graph as recorded, param node first
  std::shared_ptr<torch::jit::Graph> graph_;
  std::vector<c10::IValue> inputs_, outputs_;
  ValueRecord values_;
  std::unordered_map<const torch::jit::Node*, std::vector<c10::IValue>> node_inputs_;
};

}  // namespace autograph
