#include "graph_pass/fuse_attention.h"

#include <torch/csrc/jit/ir/constants.h>
#include <torch/csrc/jit/ir/ir.h>
#include <torch/csrc/jit/ir/named_value.h>
#include <torch/csrc/jit/passes/dead_code_elimination.h>

#include <optional>
#include <algorithm>
#include <iterator>
#include <unordered_map>
#include <unordered_set>

#include "graph_pass/constant_arguments.h"
#include "graph_pass/top_level_nodes.h"

namespace autograph {

namespace {

using torch::jit::Node;
using torch::jit::Value;

// One attention written out: [transpose K] -> scores matmul -> [scale] -> [mask add] -> softmax -> matmul V.
struct Attention {
  Node* transpose = nullptr;
  Node* scores = nullptr;  // matmul(Q, K^T)
  Node* scale = nullptr;   // div / mul by a constant, or none
  Node* mask_add = nullptr;
  Node* softmax = nullptr;
  Node* output = nullptr;  // matmul(P, V)
  int mask_input = -1;     // which input of mask_add is the mask
  double scale_value = 1.0;
  // The operands, read from the nodes when needed: fusing an earlier attention replaces the value
  // of its output, which a later one may read.
  Value* q() const { return scores->input(0); }
  Value* k() const { return transpose->input(0); }
  Value* v() const { return output->input(1); }
  Value* mask() const { return mask_add ? mask_add->input(mask_input) : nullptr; }
};

bool SoleUse(const Value* v, const Node* user) { return v->uses().size() == 1 && v->uses()[0].user == user; }

// Q K^T: matmul(Q, transpose(K, -1, -2)) (either order of the dims, or 2 and 3 of a 4-D K).
bool MatchScores(Node* matmul, Attention* a) {
  if (matmul->kind() != c10::aten::matmul || matmul->inputs().size() != 2) return false;
  Node* t = matmul->input(1)->node();
  if (t->kind() != c10::aten::transpose || t->inputs().size() != 3) return false;
  const auto d0 = ConstantInt(t->input(1)), d1 = ConstantInt(t->input(2));
  if (!d0 || !d1) return false;
  const int64_t lo = std::min(*d0, *d1), hi = std::max(*d0, *d1);
  if (!((lo == -2 && hi == -1) || (lo == 2 && hi == 3))) return false;
  a->transpose = t;
  a->scores = matmul;
  return true;
}

// `value`, read only by `user`: the scores, scaled by a constant (div or mul) or not.
bool MatchScaledScores(Value* value, const Node* user, Attention* a) {
  if (!SoleUse(value, user)) return false;
  Node* n = value->node();
  if (n->kind() == c10::aten::div && n->inputs().size() == 2) {
    const auto c = ConstantNumber(n->input(1));
    if (!c || *c == 0 || !SoleUse(n->input(0), n) || !MatchScores(n->input(0)->node(), a)) return false;
    a->scale = n;
    a->scale_value = 1.0 / *c;
    return true;
  }
  if (n->kind() == c10::aten::mul && n->inputs().size() == 2) {
    for (int i : {0, 1}) {
      const auto c = ConstantNumber(n->input(1 - i));
      if (c && SoleUse(n->input(i), n) && MatchScores(n->input(i)->node(), a)) {
        a->scale = n;
        a->scale_value = *c;
        return true;
      }
    }
    return false;
  }
  return MatchScores(n, a);
}

std::optional<Attention> Match(Node* output) {
  if (output->kind() != c10::aten::matmul || output->inputs().size() != 2) return std::nullopt;
  Node* softmax = output->input(0)->node();
  if (softmax->kind() != c10::aten::softmax || softmax->inputs().size() != 3 || !SoleUse(softmax->output(), output))
    return std::nullopt;
  const auto dim = ConstantInt(softmax->input(1));
  const auto dtype = torch::jit::toIValue(softmax->input(2));
  if (!dim || (*dim != -1 && *dim != 3) || !dtype || !dtype->isNone()) return std::nullopt;
  Attention a;
  a.softmax = softmax;
  a.output = output;
  Value* s = softmax->input(0);
  Node* add = s->node();
  if (add->kind() == c10::aten::add && add->inputs().size() == 3 && SoleUse(s, softmax)) {
    const auto alpha = ConstantNumber(add->input(2));
    if (!alpha || *alpha != 1) return std::nullopt;
    for (int i : {0, 1}) {
      Attention candidate = a;
      if (MatchScaledScores(add->input(i), add, &candidate)) {
        candidate.mask_add = add;
        candidate.mask_input = 1 - i;
        return candidate;
      }
    }
    return std::nullopt;
  }
  if (MatchScaledScores(s, softmax, &a)) return a;
  return std::nullopt;
}

// What the run showed of an attention's operands.
struct Operands {
  at::Tensor q, k, v, mask;
};

bool ShapesFit(const Operands& o) {
  if (!o.q.defined() || !o.k.defined() || !o.v.defined()) return false;
  if (o.q.dim() != 4 || o.k.dim() != 4 || o.v.dim() != 4) return false;
  if (!o.q.is_floating_point() || o.k.scalar_type() != o.q.scalar_type() || o.v.scalar_type() != o.q.scalar_type())
    return false;
  if (o.k.device() != o.q.device() || o.v.device() != o.q.device()) return false;
  for (int d : {0, 1})
    if (o.k.size(d) != o.q.size(d) || o.v.size(d) != o.q.size(d)) return false;
  if (o.q.size(3) != o.k.size(3) || o.k.size(2) != o.v.size(2)) return false;
  if (!o.mask.defined()) return true;
  if (o.mask.scalar_type() != o.q.scalar_type() || o.mask.device() != o.q.device() || o.mask.dim() > 4) return false;
  const int64_t scores[4] = {o.q.size(0), o.q.size(1), o.q.size(2), o.k.size(2)};
  for (int64_t i = 1; i <= o.mask.dim(); ++i) {
    const int64_t m = o.mask.size(-i);
    if (m != 1 && m != scores[4 - i]) return false;
  }
  return true;
}

}  // namespace

int FuseScaledDotProductAttention(std::shared_ptr<torch::jit::Graph>& graph,
                                  const std::vector<c10::IValue>& example_inputs) {
  return FuseScaledDotProductAttention(graph, GraphValues::Record(graph, example_inputs));
}

int FuseScaledDotProductAttention(std::shared_ptr<torch::jit::Graph>& graph, const GraphValues& values) {
  values.CheckFits(*graph, "FuseScaledDotProductAttention");
  // Each node in one attention at most (fusing one destroys its nodes).
  std::vector<Attention> found;
  std::unordered_set<const Node*> claimed;
  for (Node* n : graph->nodes()) {
    auto a = Match(n);
    if (!a) continue;
    const Node* nodes[] = {a->output, a->softmax, a->mask_add, a->scale, a->scores};
    if (std::any_of(std::begin(nodes), std::end(nodes), [&](const Node* m) { return m && claimed.count(m); })) continue;
    for (const Node* m : nodes)
      if (m) claimed.insert(m);
    found.push_back(*a);
  }
  if (found.empty()) return 0;

  // The recorded run: the operands' real shapes and dtypes.
  std::vector<Operands> operands(found.size());
  // node -> (attention, 0 q | 1 k | 2 v | 3 mask); a K^T may serve several attentions
  std::unordered_multimap<const Node*, std::pair<size_t, int>> watch;
  for (size_t i = 0; i < found.size(); ++i) {
    watch.emplace(found[i].scores, std::make_pair(i, 0));
    watch.emplace(found[i].transpose, std::make_pair(i, 1));
    watch.emplace(found[i].output, std::make_pair(i, 2));
    if (found[i].mask_add) watch.emplace(found[i].mask_add, std::make_pair(i, 3));
  }
  for (const auto& [n, watched] : watch) {
    const std::vector<c10::IValue>* in = values.InputsOf(n);
    if (!in) continue;  // not in the recorded run: its attention keeps undefined operands and stays
    auto tensor = [&](size_t k) { return k < in->size() && (*in)[k].isTensor() ? (*in)[k].toTensor() : at::Tensor(); };
    const auto [i, role] = watched;
    Operands& o = operands[i];
    if (role == 0) o.q = tensor(0);
    if (role == 1) o.k = tensor(0);
    if (role == 2) o.v = tensor(1);
    if (role == 3) o.mask = tensor(found[i].mask_input);
  }

  int fused = 0;
  for (size_t i = 0; i < found.size(); ++i) {
    const Attention& a = found[i];
    if (!ShapesFit(operands[i])) continue;
    torch::jit::WithInsertPoint guard(a.output);
    Value* mask = a.mask() ? a.mask() : graph->insertConstant(c10::IValue());
    // The scale is explicit even when it is 1: the fused op's default is 1/sqrt(E).
    Value* out = graph->insert(c10::aten::scaled_dot_product_attention,
                               {a.q(), a.k(), a.v(), mask, 0.0, false}, {torch::jit::NamedValue("scale", a.scale_value)});
    out->setType(a.output->output()->type());
    a.output->output()->replaceAllUsesWith(out);
    for (Node* n : {a.output, a.softmax, a.mask_add, a.scale, a.scores})
      if (n) n->destroy();
    if (!a.transpose->output()->hasUses()) a.transpose->destroy();
    ++fused;
  }
  if (fused > 0) torch::jit::EliminateDeadCode(graph);
  return fused;
}

}  // namespace autograph
