#include "graph_pass/stitch_memory_bound_ops.h"

#include <torch/csrc/jit/ir/alias_analysis.h>  // AliasDb: moving group members together
#include <torch/csrc/jit/ir/constants.h>
#include <torch/csrc/jit/ir/ir.h>
#include <torch/csrc/jit/passes/dead_code_elimination.h>
#include <torch/csrc/jit/passes/remove_mutation.h>  // RemoveTensorMutation
#include <ATen/ATen.h>
#include <ATen/core/dispatch/Dispatcher.h>

#include <functional>
#include <map>
#include <optional>
#include <set>
#include <unordered_map>

#include "core/operator_flops.h"
#include "graph_pass/graph_values.h"
#include "graph_pass/stitchable_op.h"
#include "graph_pass/top_level_nodes.h"

namespace autograph {

using torch::jit::Node;
using torch::jit::Value;

namespace {

const c10::Symbol kStitched = c10::Symbol::fromQualString("autograph::stitched");

// One group turned into a program: its tensor inputs and the member outputs read outside it.
struct GroupProgram {
  StitchProgram program;
  std::vector<Value*> inputs;
  std::vector<Value*> outputs;
};

GroupProgram BuildProgram(const std::vector<Node*>& members, const std::map<Node*, StitchableOp>& analysis,
                          Node* return_node) {
  GroupProgram g;
  std::unordered_map<Value*, int> value_id;
  std::set<Node*> in_group(members.begin(), members.end());
  g.program.reduce_dims = 0;
  for (Node* m : members) {
    const StitchableOp& op = analysis.at(m);
    if (op.split >= 0) g.program.reduce_dims = static_cast<int>(op.domain.size()) - op.split;
  }
  auto operand_id = [&](Value* v) {
    auto it = value_id.find(v);
    if (it != value_id.end()) return it->second;
    StitchStatement s;
    s.op = StitchOp::Input;
    s.input = static_cast<int>(g.inputs.size());
    g.inputs.push_back(v);
    g.program.statements.push_back(s);
    const int id = static_cast<int>(g.program.statements.size()) - 1;
    value_id[v] = id;
    return id;
  };
  for (Node* m : members) value_id[m->output()] = EmitStitchStatements(m, &g.program, operand_id);
  for (Node* m : members) {
    bool outside = false;
    for (const torch::jit::Use& use : m->output()->uses())
      outside |= use.user == return_node || !in_group.count(use.user);
    if (!outside) continue;
    g.outputs.push_back(m->output());
    g.program.outputs.push_back(StitchOutput{value_id.at(m->output()), analysis.at(m).row_output && analysis.at(m).keepdim});
  }
  ValidateStitchProgram(g.program);
  return g;
}

// Moves the members next to each other (as far as in-place writes allow) and checks that one node
// at the last member's place can stand for all of them.
bool MakeContiguous(const std::shared_ptr<torch::jit::Graph>& graph, const std::vector<Node*>& members,
                    const GroupProgram& g) {
  torch::jit::AliasDb alias_db(graph);
  for (size_t i = 1; i < members.size(); ++i) {
    if (!alias_db.moveAfterTopologicallyValid(members[i], members[i - 1])) return false;
  }
  Node* last = members.front();
  for (Node* m : members)
    if (m->isAfter(last)) last = m;
  for (Value* v : g.inputs)
    if (v->node()->isAfter(last)) return false;
  std::set<Node*> in_group(members.begin(), members.end());
  for (Value* v : g.outputs)
    for (const torch::jit::Use& use : v->uses())
      if (use.user != graph->return_node() && !in_group.count(use.user) && !use.user->isAfter(last)) return false;
  return true;
}

// Returns the node that unpacks the stitched outputs, in the order of g.outputs.
Node* ReplaceWithStitched(const std::shared_ptr<torch::jit::Graph>& graph, const std::vector<Node*>& members,
                          const GroupProgram& g) {
  Node* last = members.front();
  for (Node* m : members)
    if (m->isAfter(last)) last = m;
  torch::jit::WithInsertPoint guard(last->next());
  Value* list = graph->insertNode(graph->createList(c10::TensorType::get(), g.inputs))->output();
  Value* text = graph->insertConstant(g.program.ToString());
  Node* stitched = graph->insertNode(graph->create(kStitched, {list, text}, 1));
  stitched->output()->setType(c10::ListType::ofTensors());
  Node* unpack = graph->insertNode(graph->createListUnpack(stitched->output(), g.outputs.size()));
  for (size_t i = 0; i < g.outputs.size(); ++i) {
    unpack->output(i)->setType(g.outputs[i]->type());
    g.outputs[i]->replaceAllUsesWith(unpack->output(i));
  }
  for (auto it = members.rbegin(); it != members.rend(); ++it) (*it)->destroy();
  return unpack;
}

// Whether a node is one the planner could stitch (in-place forms included).
bool StitchableKindOf(const Node* n) {
  if (!n->kind().is_aten()) return false;
  std::string kind = n->kind().toQualString();
  if (kind.back() == '_') kind.pop_back();
  return IsStitchableKind(kind);
}

std::optional<at::Tensor> ConstantTensor(const Value* v) {
  auto c = torch::jit::toIValue(v);
  if (c && c->isTensor() && c->toTensor().layout() == c10::kStrided) return c->toTensor();
  return std::nullopt;
}

// Inference batch norms that freezing could not fold into a convolution (pre-activation nets:
// DenseNet's BN -> ReLU -> conv, a BN after a concat) become x * scale + shift with per-channel
// constants of shape [C, 1, ...] — what ATen computes for them anyway — where a stitchable operator
// reads or writes them, so the planner can put them in one kernel with their activation. A batch norm
// with no stitchable neighbour stays one kernel, and so does one whose two halves the planner then
// leaves unstitched (RestoreUnstitchedBatchNorms). Input ranks and dtypes from the recorded run.
struct DecomposedBatchNorm {
  Node* mul;
  Node* add;
  std::vector<Value*> inputs;  // the batch norm's, to rebuild it
};

std::vector<DecomposedBatchNorm> DecomposeBatchNormsNextToStitchable(const std::shared_ptr<torch::jit::Graph>& graph,
                                                                     const GraphValues& values) {
  std::vector<Node*> candidates;
  for (Node* n : graph->nodes()) {
    if (n->kind() != c10::aten::batch_norm || n->inputs().size() < 8) continue;
    auto training = torch::jit::toIValue(n->input(5));
    auto eps = torch::jit::toIValue(n->input(7));
    auto mean = ConstantTensor(n->input(3)), var = ConstantTensor(n->input(4));
    if (!training || !training->isBool() || training->toBool() || !eps || !eps->isDouble() || !mean || !var) continue;
    bool affine_ok = true;
    for (size_t i : {1, 2}) affine_ok &= n->input(i)->type()->kind() == c10::TypeKind::NoneType || ConstantTensor(n->input(i));
    if (!affine_ok) continue;
    bool neighbour = StitchableKindOf(n->input(0)->node());
    for (const torch::jit::Use& use : n->output()->uses()) neighbour |= StitchableKindOf(use.user);
    if (neighbour) candidates.push_back(n);
  }
  if (candidates.empty()) return {};
  std::vector<DecomposedBatchNorm> decomposed;
  for (Node* n : candidates) {
    const at::Tensor input = values.TensorOf(n->input(0));
    const at::Tensor mean = *ConstantTensor(n->input(3)), var = *ConstantTensor(n->input(4));
    // Same dtype as the statistics: a half input with float statistics would come out float.
    if (!input.defined() || input.dim() < 2 || input.scalar_type() != mean.scalar_type()) continue;
    const double eps = torch::jit::toIValue(n->input(7))->toDouble();
    at::Tensor scale = (var.to(at::kDouble) + eps).rsqrt();
    if (auto w = ConstantTensor(n->input(1))) scale = scale * w->to(at::kDouble);
    at::Tensor shift = -mean.to(at::kDouble) * scale;
    if (auto b = ConstantTensor(n->input(2))) shift = shift + b->to(at::kDouble);
    std::vector<int64_t> shape(static_cast<size_t>(input.dim()) - 1, 1);
    shape[0] = mean.numel();
    torch::jit::WithInsertPoint guard(n);
    Value* s = graph->insertConstant(scale.to(mean.scalar_type()).reshape(shape).contiguous());
    Value* t = graph->insertConstant(shift.to(mean.scalar_type()).reshape(shape).contiguous());
    Value* scaled = graph->insert(c10::aten::mul, {n->input(0), s});
    Value* shifted = graph->insert(c10::aten::add, {scaled, t});
    shifted->setType(n->output()->type());
    n->output()->replaceAllUsesWith(shifted);
    decomposed.push_back({scaled->node(), shifted->node(), {n->inputs().begin(), n->inputs().end()}});
    n->destroy();
  }
  return decomposed;
}

// A decomposed batch norm none of whose halves was stitched is one batch norm again.
void RestoreUnstitchedBatchNorms(const std::shared_ptr<torch::jit::Graph>& graph,
                                 const std::vector<DecomposedBatchNorm>& decomposed, const std::set<Node*>& stitched) {
  for (const DecomposedBatchNorm& d : decomposed) {
    if (stitched.count(d.mul) || stitched.count(d.add)) continue;
    Node* bn = graph->create(c10::aten::batch_norm, d.inputs, 1)->insertBefore(d.mul);
    bn->output()->setType(d.add->output()->type());
    d.add->output()->replaceAllUsesWith(bn->output());
    d.add->destroy();
    d.mul->destroy();
  }
}

// In-place operators in a chain of stitchable ones (the relu_ after a residual add_, ...) become their
// functional forms where PyTorch's alias analysis proves that nobody else sees the write
// (RemoveTensorMutation), so the planner may group them. Lone ones stay in place: there a functional
// form would only cost an allocation per run.
void FunctionalizeStitchableChains(const std::shared_ptr<torch::jit::Graph>& graph) {
  torch::jit::RemoveTensorMutation(graph, [&](Node* n) {
    const std::string kind = n->kind().toQualString();
    if (kind.back() != '_' || n->owningBlock() != graph->block() || !StitchableKindOf(n)) return false;
    for (const Value* v : n->inputs())
      if (StitchableKindOf(v->node())) return true;
    for (const torch::jit::Use& use : n->output()->uses())
      if (StitchableKindOf(use.user)) return true;
    return false;
  });
}

// Asks the judge about one group: its operators run one by one on the inputs the example run gave
// them, against the stitched kernel on the group's inputs.
template <typename ValueOf>
bool GroupPays(const StitchGroupJudge& judge, const std::vector<Node*>& members, const GroupProgram& g,
               const GraphValues& recorded, const ValueOf& value_of) {
  std::vector<std::pair<torch::jit::Operation, const std::vector<c10::IValue>*>> ops;
  for (Node* n : members) {
    const std::vector<c10::IValue>* in = recorded.InputsOf(n);
    if (!in) return true;  // not run in the example (cannot happen at top level): no evidence
    ops.emplace_back(n->getOperation(), in);
  }
  std::vector<at::Tensor> inputs;
  for (const Value* v : g.inputs) inputs.push_back(value_of(v));
  const std::string text = g.program.ToString();
  static const c10::OperatorHandle stitched_op = c10::Dispatcher::singleton().findSchemaOrThrow("autograph::stitched", "");
  auto run_operators = [&] {
    for (auto& [op, in] : ops) {
      torch::jit::Stack stack(in->begin(), in->end());
      op(stack);
    }
  };
  auto run_stitched = [&] {
    torch::jit::Stack stack{c10::IValue(inputs), c10::IValue(text)};
    stitched_op.callBoxed(&stack);
  };
  return judge(run_operators, run_stitched);
}

// A stitched kernel indexes strided memory: tensors in oneDNN's blocked layout (prepack_onednn's
// regions) or sparse ones stay with the operators that understand them.
template <typename ValueOf>
bool TouchesOpaqueLayout(const Node* n, const ValueOf& value_of) {
  auto opaque = [&](const Value* v) {
    const at::Tensor t = value_of(v);
    return t.defined() && t.layout() != c10::kStrided;
  };
  for (const Value* v : n->inputs())
    if (opaque(v)) return true;
  for (const Value* v : n->outputs())
    if (opaque(v)) return true;
  return false;
}

using ValueOf = std::function<at::Tensor(const Value*)>;

// The planner's view: every top-level node, stitchable ones with their domain, and the tensors
// between them (sizes, producers, consumers, pairs that must stay apart, in-place ordering).
struct PlannerView {
  StitchGraph graph;
  std::map<Node*, StitchableOp> analysis;
  int candidates = 0;
};

void AddStitchableNodes(const std::vector<Node*>& order, const ValueOf& value_of, PlannerView* view) {
  StitchGraph& sg = view->graph;
  sg.nodes.resize(order.size());
  std::map<std::tuple<std::vector<int64_t>, c10::ScalarType, std::string>, int> domains;
  for (size_t i = 0; i < order.size(); ++i) {
    Node* n = order[i];
    if (WritesAnInput(n) || TouchesOpaqueLayout(n, value_of)) continue;
    auto op = AnalyzeStitchable(n, value_of);
    if (!op) continue;
    const at::Tensor out = value_of(n->output());
    auto key = std::make_tuple(op->domain, out.scalar_type(), out.device().str());
    auto [it, fresh] = domains.emplace(key, static_cast<int>(domains.size()));
    sg.nodes[i] = StitchNode{true, it->second, op->split, op->weight};
    view->analysis.emplace(n, std::move(*op));
    view->candidates++;
  }
}

void AddStitchTensors(const std::shared_ptr<torch::jit::Graph>& graph, const TopLevelNodes& nodes,
                      const ValueOf& value_of, PlannerView* view) {
  StitchGraph& sg = view->graph;
  const std::vector<Node*>& order = nodes.order;
  const torch::jit::Block* top = graph->block();
  std::map<const Value*, int> tensor_of;
  auto tensor_id = [&](Value* v) {
    auto it = tensor_of.find(v);
    if (it != tensor_of.end()) return it->second;
    StitchTensor t;
    Node* p = v->node();
    t.producer = (p->kind() == c10::prim::Constant || p == graph->param_node()) ? -1 : nodes.position.at(p);
    const at::Tensor value = value_of(v);
    t.bytes = value.defined() ? value.numel() * static_cast<int64_t>(value.element_size()) : 0;
    sg.tensors.push_back(t);
    tensor_of[v] = static_cast<int>(sg.tensors.size()) - 1;
    return tensor_of[v];
  };
  for (size_t i = 0; i < order.size(); ++i) {
    Node* n = order[i];
    std::vector<Value*> reads;
    ReadValues(n, &reads);
    for (Value* v : reads) {
      if (v->node()->owningBlock() != top && v->node() != graph->param_node()) continue;  // defined inside n
      StitchTensor& t = sg.tensors[tensor_id(v)];
      if (t.consumers.empty() || t.consumers.back() != static_cast<int>(i)) t.consumers.push_back(static_cast<int>(i));
      // A member may only read another member's value where the program can: as a tensor operand,
      // and a reduction's row value only when its dims were kept (so it broadcasts as a row).
      auto consumer = view->analysis.find(n);
      if (t.producer < 0 || consumer == view->analysis.end() || !sg.nodes[t.producer].stitchable) continue;
      const StitchableOp& producer = view->analysis.at(order[t.producer]);
      const auto& operands = consumer->second.tensor_inputs;
      if (std::find(operands.begin(), operands.end(), v) == operands.end() ||
          (producer.row_output && !producer.keepdim)) {
        sg.apart.emplace_back(t.producer, static_cast<int>(i));
      }
    }
  }
  for (Value* v : graph->outputs()) {
    if (v->node()->kind() != c10::prim::Constant && v->node() != graph->param_node()) sg.tensors[tensor_id(v)].graph_output = true;
  }
  // Order around in-place writes: readers of a written tensor stay on their side of the write.
  // Side effects likewise (SideEffectOrderPairs).
  std::vector<std::pair<int, int>> order_pairs = InPlaceOrderPairs(graph, order);
  for (const auto& pair : SideEffectOrderPairs(order)) order_pairs.push_back(pair);
  for (const auto& [earlier, later] : order_pairs) {
    StitchTensor order_edge;  // no bytes: an ordering constraint only
    order_edge.producer = earlier;
    order_edge.consumers = {later};
    sg.tensors.push_back(order_edge);
  }
  for (auto& t : sg.tensors) {
    // Consumers in topological order, the producer before them (ids are graph positions).
    std::sort(t.consumers.begin(), t.consumers.end());
  }
}

}  // namespace

StitchReport StitchMemoryBoundOps(std::shared_ptr<torch::jit::Graph>& graph,
                                  const std::vector<c10::IValue>& example_inputs, const StitchPlanOptions& options,
                                  const StitchGroupJudge& judge) {
  return StitchMemoryBoundOps(graph, GraphValues::Record(graph, example_inputs), options, judge);
}

StitchReport StitchMemoryBoundOps(std::shared_ptr<torch::jit::Graph>& graph, const GraphValues& values,
                                  const StitchPlanOptions& options, const StitchGroupJudge& judge) {
  values.CheckFits(*graph, "StitchMemoryBoundOps");
  const std::vector<DecomposedBatchNorm> batch_norms = DecomposeBatchNormsNextToStitchable(graph, values);
  FunctionalizeStitchableChains(graph);
  const TopLevelNodes nodes = TopLevelNodesOf(*graph);
  const std::vector<Node*>& order = nodes.order;

  // 1. Shapes, and the data a judge times groups on, from the recorded run; the graph runs again only
  // when the two steps above made new nodes (their values, and pointers of destroyed ones, no longer fit).
  std::optional<GraphValues> rerecorded;
  if (!values.Fits(*graph)) rerecorded = GraphValues::Record(graph, values.inputs());
  const GraphValues& recorded = rerecorded ? *rerecorded : values;
  std::unordered_map<const Value*, at::Tensor> carried;  // stitched kernels' outputs: their members' values
  const ValueOf value_of = [&](const Value* v) -> at::Tensor {
    auto it = carried.find(v);
    return it != carried.end() ? it->second : recorded.TensorOf(v);
  };

  // 2. The planner's view.
  PlannerView view;
  AddStitchableNodes(order, value_of, &view);
  AddStitchTensors(graph, nodes, value_of, &view);
  StitchReport report;
  report.candidates = view.candidates;
  const std::map<Node*, StitchableOp>& analysis = view.analysis;

  // 3. Plan, then rewrite each group of two or more.
  std::set<Node*> stitched;
  int counted_halves = 0;  // decomposed batch norms with a half stitched so far
  auto finish = [&] {
    if (batch_norms.empty()) return report;
    RestoreUnstitchedBatchNorms(graph, batch_norms, stitched);
    torch::jit::EliminateDeadCode(graph);  // the scale and shift constants of restored ones
    return report;
  };
  if (report.candidates < 2) return finish();
  StitchPlan plan = PlanStitchGroups(view.graph, options);
  report.subproblems_ilp = plan.subproblems_ilp;
  report.subproblems_greedy = plan.subproblems_greedy;
  report.planned_cost_us = plan.cost_us;
  std::vector<std::vector<Node*>> groups(plan.num_groups);
  for (size_t i = 0; i < order.size(); ++i)
    if (plan.group_of[i] >= 0) groups[plan.group_of[i]].push_back(order[i]);
  auto only_a_batch_norm = [&](const std::vector<Node*>& members) {  // one kernel either way: ATen's
    if (members.size() != 2) return false;
    for (const DecomposedBatchNorm& d : batch_norms)
      if ((members[0] == d.mul && members[1] == d.add) || (members[0] == d.add && members[1] == d.mul)) return true;
    return false;
  };
  for (const auto& members : groups) {
    if (members.size() < 2 || only_a_batch_norm(members)) continue;
    GroupProgram g = BuildProgram(members, analysis, graph->return_node());
    if (g.outputs.empty()) continue;
    if (judge && !GroupPays(judge, members, g, recorded, value_of)) {
      report.groups_rejected++;
      continue;
    }
    if (!MakeContiguous(graph, members, g)) continue;
    stitched.insert(members.begin(), members.end());  // destroyed below: compared, never dereferenced
    Node* unpack = ReplaceWithStitched(graph, members, g);
    // Later groups may read these outputs: their recorded values carry over to the new values.
    for (size_t i = 0; i < g.outputs.size(); ++i) carried[unpack->output(i)] = value_of(g.outputs[i]);
    report.groups++;
    // ops_stitched counts the graph's own operators: a decomposed batch norm is one, whether both its
    // halves joined the group (one absorbed) or one did (none: the other half still runs).
    int halves = 0;
    for (const DecomposedBatchNorm& d : batch_norms) halves += stitched.count(d.mul) + stitched.count(d.add) > 0;
    report.ops_stitched += static_cast<int>(members.size()) - (halves - counted_halves);
    counted_halves = halves;
  }
  return finish();
}

}  // namespace autograph
