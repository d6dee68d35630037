#include "graph_pass/merge_sibling_linears.h"
#include "graph_pass/sibling_linears.h"

#include <torch/csrc/jit/ir/constants.h>
#include <torch/csrc/jit/ir/ir.h>
#include <torch/csrc/jit/passes/dead_code_elimination.h>

#include <algorithm>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

namespace autograph {

namespace {

using torch::jit::Graph;
using torch::jit::Node;
using torch::jit::Value;

bool IsInPlace(const Node* node) {
  const std::string name = node->kind().toUnqualString();
  return !name.empty() && name.back() == '_';
}

bool IsView(const Node* node) { return node->kind() == c10::aten::view || node->kind() == c10::aten::view_as; }

// Whether a linear's output may become a slice of a wider one: nothing writes into it, and a view
// of it (a slice is not contiguous, so view may fail; it becomes reshape, see Merge) is not written
// into either, so whether reshape aliases or copies cannot be told apart.
bool OutputSafeToSlice(const Value* out) {
  for (const torch::jit::Use& use : out->uses()) {
    if (IsInPlace(use.user)) return false;
    if (IsView(use.user))
      for (const torch::jit::Use& view_use : use.user->output()->uses())
        if (IsInPlace(view_use.user)) return false;
  }
  return true;
}

// Where each weight and bias is first read by a linear, in graph order: a deterministic rank for
// tensors (their addresses are not).
using TensorRanks = std::map<const void*, int>;
TensorRanks RankTensors(const Graph& graph) {
  TensorRanks ranks;
  for (const Node* node : graph.nodes()) {
    if (node->kind() != c10::aten::linear) continue;
    for (size_t i = 1; i < node->inputs().size(); ++i)
      if (const auto v = torch::jit::toIValue(node->input(i)); v && v->isTensor())
        ranks.emplace(v->toTensor().unsafeGetTensorImpl(), static_cast<int>(ranks.size()));
  }
  return ranks;
}

// Siblings in the order of the tensors they read, not of where they sit in the graph: the steps of
// an unrolled RNN may list the same linears in different orders (stitching moves nodes), and must
// still make one key and share one concatenation; three copies of a 12 MB weight no longer fit a
// CPU's last-level cache where one does. Ties (one weight read twice) keep graph order.
void SortByTensors(std::vector<SiblingLinear>& group, const TensorRanks& ranks) {
  auto rank = [&](const at::Tensor& t) {
    if (!t.defined()) return -1;
    const auto it = ranks.find(t.unsafeGetTensorImpl());
    return it == ranks.end() ? -1 : it->second;
  };
  std::sort(group.begin(), group.end(), [&](const SiblingLinear& a, const SiblingLinear& b) {
    const auto ka = std::make_pair(rank(a.weight), rank(a.bias));
    const auto kb = std::make_pair(rank(b.weight), rank(b.bias));
    return ka != kb ? ka < kb : a.node->isBefore(b.node);
  });
}

Node* EarliestInGraph(const std::vector<SiblingLinear>& group) {
  Node* first = group.front().node;
  for (const SiblingLinear& s : group)
    if (s.node->isBefore(first)) first = s.node;
  return first;
}

// The tensors a group is made of (weight and bias per sibling; null for no bias): groups with equal
// keys — an unrolled RNN's steps — share one concatenation, not one copy per use.
std::vector<const void*> TensorsKey(const std::vector<SiblingLinear>& group) {
  std::vector<const void*> key;
  for (const SiblingLinear& s : group) {
    key.push_back(s.weight.unsafeGetTensorImpl());
    key.push_back(s.bias.defined() ? s.bias.unsafeGetTensorImpl() : nullptr);
  }
  return key;
}

// The group's weights concatenated along the rows, and its biases when every sibling has one
// (else undefined).
std::pair<at::Tensor, at::Tensor> Concatenate(const std::vector<SiblingLinear>& group) {
  std::vector<at::Tensor> weights, biases;
  for (const SiblingLinear& s : group) {
    weights.push_back(s.weight);
    if (s.bias.defined()) biases.push_back(s.bias);
  }
  return {at::cat(weights, 0), biases.size() == group.size() ? at::cat(biases, 0) : at::Tensor()};
}

// The merged weight and bias constants, by TensorsKey.
using MergedConstants = std::map<std::vector<const void*>, std::pair<Value*, Value*>>;

// One group: replaced, before its first sibling, by linear(x, cat W, cat b) -> split_with_sizes ->
// unpack, the rows in the order of SortByTensors. x is read from the node now: an earlier merge may
// have replaced it (a group reading a merged linear).
void Merge(Graph& graph, std::vector<SiblingLinear>& group, MergedConstants& constants, const TensorRanks& ranks) {
  Value* x = group.front().node->input(0);
  SortByTensors(group, ranks);
  Node* const first = EarliestInGraph(group);
  std::vector<int64_t> sizes;
  for (const SiblingLinear& s : group) sizes.push_back(s.weight.size(0));
  const std::vector<const void*> key = TensorsKey(group);
  auto merged = constants.find(key);
  if (merged == constants.end()) {
    // At the top of the graph, so that later groups of the same tensors can read them too.
    torch::jit::WithInsertPoint guard(graph.block()->nodes().front());
    const auto [w, b] = Concatenate(group);
    Value* weight = graph.insertConstant(w);
    Value* bias = graph.insertConstant(b.defined() ? c10::IValue(b) : c10::IValue());
    merged = constants.emplace(key, std::make_pair(weight, bias)).first;
  }
  Node* unpack = nullptr;
  {  // the guard must not outlive the first sibling, destroyed below
    torch::jit::WithInsertPoint guard(first);
    auto [weight, bias] = merged->second;
    Value* wide = graph.insert(c10::aten::linear, {x, weight, bias});
    Value* parts = graph.insert(c10::aten::split_with_sizes, {wide, sizes, -1});
    unpack = graph.insertNode(graph.createListUnpack(parts, static_cast<int>(group.size())));
  }
  for (size_t i = 0; i < group.size(); ++i) {
    unpack->output(i)->setType(group[i].node->output()->type());
    group[i].node->output()->replaceAllUsesWith(unpack->output(i));
    group[i].node->destroy();
    ViewsToReshapes(graph, unpack->output(i));
  }
}

}  // namespace

std::optional<SiblingLinear> AsSiblingLinear(Node* node, const Value* x, const Graph& graph) {
  if (node->kind() != c10::aten::linear || node->inputs().size() != 3 || node->input(0) != x) return std::nullopt;
  if (node->owningBlock() != graph.block() || !OutputSafeToSlice(node->output())) return std::nullopt;
  const auto weight = torch::jit::toIValue(node->input(1));
  const auto bias = torch::jit::toIValue(node->input(2));
  if (!weight || !weight->isTensor() || !bias || !(bias->isNone() || bias->isTensor())) return std::nullopt;
  SiblingLinear s{node, weight->toTensor(), bias->isTensor() ? bias->toTensor() : at::Tensor()};
  if (s.weight.dim() != 2 || s.weight.requires_grad()) return std::nullopt;
  if (s.bias.defined() && (s.bias.dim() != 1 || s.bias.size(0) != s.weight.size(0) ||
                           s.bias.scalar_type() != s.weight.scalar_type() || s.bias.device() != s.weight.device()))
    return std::nullopt;
  return s;
}

void ViewsToReshapes(Graph& graph, Value* slice) {
  std::vector<Node*> views;
  for (const torch::jit::Use& use : slice->uses())
    if (IsView(use.user)) views.push_back(use.user);
  for (Node* view : views) {
    torch::jit::WithInsertPoint guard(view);
    const c10::Symbol kind = view->kind() == c10::aten::view ? c10::aten::reshape : c10::aten::reshape_as;
    Value* reshaped = graph.insert(kind, {view->input(0), view->input(1)});
    reshaped->setType(view->output()->type());
    view->output()->replaceAllUsesWith(reshaped);
    view->destroy();
  }
}

std::vector<std::vector<SiblingLinear>> SiblingLinearGroups(Graph& graph, bool same_bias) {
  // Values any node may read: the graph's inputs and every top-level output, in graph order.
  std::vector<Value*> values(graph.inputs().begin(), graph.inputs().end());
  for (Node* node : graph.nodes())
    for (Value* out : node->outputs()) values.push_back(out);
  std::vector<std::vector<SiblingLinear>> out;
  for (Value* x : values) {
    // Siblings by what must agree for one GEMM: weight dtype, device, input width, bias or not.
    std::map<std::tuple<int, std::string, int64_t, bool>, std::vector<SiblingLinear>> groups;
    for (const torch::jit::Use& use : x->uses())
      if (auto s = AsSiblingLinear(use.user, x, graph))
        groups[{static_cast<int>(s->weight.scalar_type()), s->weight.device().str(), s->weight.size(1),
                same_bias && s->bias.defined()}]
            .push_back(*s);
    for (auto& [key, group] : groups)
      if (group.size() >= 2) out.push_back(std::move(group));
  }
  return out;
}

int MergeSiblingLinears(std::shared_ptr<Graph>& graph) {
  // All groups first: merging destroys values that later groups may read (through their new names).
  std::vector<std::vector<SiblingLinear>> merges = SiblingLinearGroups(*graph);
  int merged = 0;
  MergedConstants constants;
  const TensorRanks ranks = RankTensors(*graph);
  for (auto& group : merges) {
    merged += static_cast<int>(group.size()) - 1;
    Merge(*graph, group, constants, ranks);
  }
  // The original weights are dead now; a module saved with them would carry both copies.
  if (merged > 0) torch::jit::EliminateDeadCode(graph);
  return merged;
}

int PrepareSiblingLinearsForMerging(std::shared_ptr<Graph>& graph) {
  int prepared = 0;
  // Per distinct set of weight and bias tensors: the constants of the row views, two per sibling
  // (the bias view is null when not every sibling has a bias).
  std::map<std::vector<const void*>, std::vector<Value*>> shared;
  const TensorRanks ranks = RankTensors(*graph);
  for (auto& group : SiblingLinearGroups(*graph, /*same_bias=*/false)) {
    SortByTensors(group, ranks);
    const std::vector<const void*> key = TensorsKey(group);
    auto views_of = shared.find(key);
    if (views_of == shared.end()) {
      // The concatenated tensors, and one constant per row range, at the top of the graph.
      const auto [weight, bias] = Concatenate(group);
      torch::jit::WithInsertPoint guard(graph->block()->nodes().front());
      std::vector<Value*> views;
      int64_t row = 0;
      for (const SiblingLinear& s : group) {
        const int64_t rows = s.weight.size(0);
        views.push_back(graph->insertConstant(weight.narrow(0, row, rows)));
        views.push_back(bias.defined() ? graph->insertConstant(bias.narrow(0, row, rows)) : nullptr);
        row += rows;
      }
      views_of = shared.emplace(key, std::move(views)).first;
    }
    const std::vector<Value*>& views = views_of->second;
    for (size_t i = 0; i < group.size(); ++i) {
      Node* linear = group[i].node;
      linear->replaceInput(1, views[2 * i]);
      if (views[2 * i + 1]) linear->replaceInput(2, views[2 * i + 1]);
      ViewsToReshapes(*graph, linear->output());
      ++prepared;
    }
  }
  // The original weights are dead now (unless another node reads them too).
  if (prepared > 0) torch::jit::EliminateDeadCode(graph);
  return prepared;
}

}  // namespace autograph
