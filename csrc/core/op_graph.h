#pragma once
// OpGraph: the operator-level DAG every search and executor works on. One node per operator that
// launches work; metadata and view nodes of the TorchScript graph are folded into the operator that
// produces or consumes them. Node ids are a topological order.
#include <ATen/core/Tensor.h>
#include <c10/core/ScalarType.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>
#include "autograph/op_kind.h"  // OpKind, ToString(OpKind), OpKindFromString (public: the timeline names kinds)

namespace torch::jit {
struct Graph;
struct Node;
}  // namespace torch::jit

namespace autograph {

// The inverse of c10::toString(ScalarType) ("Float", "Long", ...); nullopt for a name that is no dtype.
std::optional<c10::ScalarType> ScalarTypeFromString(const std::string& name);

// "[1,3,224,224]": how messages print a shape.
std::string ShapeString(c10::IntArrayRef shape);

struct TensorMeta {
  std::vector<int64_t> shape;
  c10::ScalarType dtype = c10::ScalarType::Undefined;
  int64_t numel() const;
  int64_t nbytes() const;
};

// What it takes to merge an operator with siblings into one wider kernel, read at import from the
// lowered graph's frozen constants (graph_pass/describe_merge_candidate.h), or from an exported
// program's weights (graph_pass/describe_aten_merge_candidate.h). The search, schedule validation and
// the executor decide and build merges from this alone, without TorchScript.
struct MergeCandidate {
  enum class Kind { None, Convolution, Linear };
  Kind kind = Kind::None;
  std::string problem;     // Kind::None, when the import looked: why the operator cannot join a merge
  int64_t input = -1;      // identity of the value it reads: equal numbers, the same value
  std::string input_name;  // "%x", for messages
  at::Tensor weight;
  std::optional<at::Tensor> bias;
  std::vector<int64_t> stride, padding, dilation;  // convolutions: 2 entries each
  // An exported program's: the positions among its graph's inputs of the weight and bias (-1: none),
  // which arrive with every run; `weight` and `bias` are the tensors of the run they were bound to.
  int weight_input = -1, bias_input = -1;
};

struct OpNode {
  int id = -1;
  std::string op;                   // schema name of the anchor, e.g. "aten::conv2d"
  OpKind kind = OpKind::View;
  std::vector<TensorMeta> inputs;   // tensor inputs of the anchor, in order
  std::vector<TensorMeta> outputs;  // tensor outputs of the anchor, in order
  double flops = 0;                 // multiply-adds count as 2
  int64_t bytes_read = 0;
  int64_t bytes_written = 0;
  int64_t weight_bytes = 0;         // part of bytes_read that comes from frozen constants
  MergeCandidate merge;
  torch::jit::Node* anchor = nullptr;           // the node that launches the work
  std::vector<torch::jit::Node*> jit_nodes;     // anchor + folded nodes, in graph order
  // An OpGraph over an AtenGraph (an exported program) instead: the indices of its nodes, anchor
  // included, in graph order.
  std::vector<int> aten_nodes;
  int aten_anchor = -1;
  // The steps the executor runs for this operator: its TorchScript or its ATen nodes.
  size_t num_steps() const { return jit_nodes.size() + aten_nodes.size(); }
};

class AtenGraph;

class OpGraph {
 public:
  OpGraph() = default;
  explicit OpGraph(std::shared_ptr<torch::jit::Graph> graph) : graph_(std::move(graph)) {}
  explicit OpGraph(std::shared_ptr<const AtenGraph> graph) : aten_graph_(std::move(graph)) {}

  int AddNode(OpNode node);  // assigns node.id
  void AddEdge(int from, int to);  // from < to required; duplicates ignored

  int size() const { return static_cast<int>(nodes_.size()); }
  const OpNode& node(int id) const { return nodes_.at(id); }
  OpNode& node(int id) { return nodes_.at(id); }
  const std::vector<OpNode>& nodes() const { return nodes_; }
  const std::vector<int>& preds(int id) const { return preds_.at(id); }
  const std::vector<int>& succs(int id) const { return succs_.at(id); }
  int num_edges() const;

  // The lowered TorchScript graph that the nodes' jit_nodes point into.
  const std::shared_ptr<torch::jit::Graph>& graph() const { return graph_; }
  // Or the exported program's ATen graph that the nodes' aten_nodes index (exactly one of the two is set).
  const std::shared_ptr<const AtenGraph>& aten_graph() const { return aten_graph_; }

 private:
  std::shared_ptr<torch::jit::Graph> graph_;
  std::shared_ptr<const AtenGraph> aten_graph_;
  std::vector<OpNode> nodes_;
  std::vector<std::vector<int>> preds_, succs_;
};

// "op 7 (aten::conv2d)": how error messages name an operator.
std::string OpLabel(const OpGraph& graph, int id);

}  // namespace autograph
