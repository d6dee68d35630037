#include "core/op_graph.h"

#include <c10/util/Exception.h>

#include <algorithm>

namespace autograph {

std::string ShapeString(c10::IntArrayRef shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? "," : "") + std::to_string(shape[i]);
  return s + "]";
}

std::optional<c10::ScalarType> ScalarTypeFromString(const std::string& name) {
  for (int t = 0; t < static_cast<int>(c10::ScalarType::NumOptions); ++t) {
    const auto type = static_cast<c10::ScalarType>(t);
    if (name == c10::toString(type)) return type;
  }
  return std::nullopt;
}

std::string OpLabel(const OpGraph& graph, int id) {
  std::string label = "op " + std::to_string(id);
  if (!graph.node(id).op.empty()) label += " (" + graph.node(id).op + ")";
  return label;
}

int64_t TensorMeta::numel() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

int64_t TensorMeta::nbytes() const {
  return dtype == c10::ScalarType::Undefined ? 0 : numel() * static_cast<int64_t>(c10::elementSize(dtype));
}

int OpGraph::AddNode(OpNode node) {
  node.id = size();
  nodes_.push_back(std::move(node));
  preds_.emplace_back();
  succs_.emplace_back();
  return nodes_.back().id;
}

static bool InsertSorted(std::vector<int>& v, int x) {
  auto it = std::lower_bound(v.begin(), v.end(), x);
  if (it != v.end() && *it == x) return false;
  v.insert(it, x);
  return true;
}

void OpGraph::AddEdge(int from, int to) {
  TORCH_CHECK(from >= 0 && to < size() && from < to, "OpGraph edge ", from, " -> ", to,
              " breaks the topological numbering");
  if (InsertSorted(succs_[from], to)) InsertSorted(preds_[to], from);
}

int OpGraph::num_edges() const {
  int e = 0;
  for (const auto& s : succs_) e += static_cast<int>(s.size());
  return e;
}

}  // namespace autograph
