#include "executor/compiled_graph.h"

// TorchScript: the executor runs each node of the lowered graph as its TorchScript Operation.
#include <torch/csrc/jit/ir/constants.h>
#include <torch/csrc/jit/ir/ir.h>
#include <torch/csrc/jit/runtime/interpreter.h>

#include <c10/core/InferenceMode.h>

#include <algorithm>
#include <sstream>
#include <unordered_map>
#include <unordered_set>

#include "autograph/error.h"
#include "core/aten_graph.h"
#include "executor/aten_operation.h"

namespace autograph {

using torch::jit::Graph;
using torch::jit::Node;
using torch::jit::Value;

namespace {

// Values a node (including the nodes in its blocks) reads that are defined outside it.
std::vector<Value*> FreeVariables(Node* node) {
  std::vector<Value*> free;
  std::unordered_set<Value*> seen;
  std::function<void(Node*)> visit = [&](Node* n) {
    for (Value* v : n->inputs()) {
      bool defined_inside = false;
      for (Node* owner = v->node(); owner; owner = owner->owningBlock() ? owner->owningBlock()->owningNode() : nullptr) {
        if (owner == node) { defined_inside = true; break; }
      }
      // Block parameters are owned by the block's param node, whose owning node is `node` or deeper.
      if (!defined_inside && seen.insert(v).second) free.push_back(v);
    }
    for (torch::jit::Block* b : n->blocks()) {
      for (Node* inner : b->nodes()) visit(inner);
      visit(b->return_node());
    }
  };
  visit(node);
  return free;
}

// A node with blocks becomes a one-node graph over its free variables, run by the interpreter.
torch::jit::Operation InterpretedOperation(Node* node, std::vector<Value*>* inputs) {
  *inputs = FreeVariables(node);
  auto sub = std::make_shared<Graph>();
  std::unordered_map<Value*, Value*> env;
  for (Value* v : *inputs) env[v] = sub->addInput()->copyMetadata(v);
  Node* clone = sub->createClone(node, [&](Value* v) { return env.at(v); });
  sub->appendNode(clone);
  for (Value* out : clone->outputs()) sub->registerOutput(out);
  auto code = std::make_shared<torch::jit::Code>(sub, std::string("autograph_") + node->kind().toUnqualString());
  return torch::jit::Operation([code](torch::jit::Stack& stack) {
    torch::jit::InterpreterState state(*code);
    state.run(stack);
  });
}

// A registered operator's Operation. One with a vararg schema and a fixed Operation (prim::Print,
// prim::format, ...) reads how many inputs it got from the top of the stack, as the interpreter pushes
// it; operators that make their Operation from the node (prim::BroadcastMKLDNNTensors) know it already.
torch::jit::Operation OperationOf(Node* node) {
  torch::jit::Operation op = node->getOperation();
  const torch::jit::Operator& registered = node->getOperator();
  if (!registered.hasOperation() || !registered.schema().is_vararg()) return op;
  const int64_t count = static_cast<int64_t>(node->inputs().size());
  return torch::jit::Operation([op, count](torch::jit::Stack& stack) mutable {
    stack.emplace_back(count);
    op(stack);
  });
}

// The interpreter builds lists and tuples itself (no registered operator does): the same here.
torch::jit::Operation PlumbingOperation(const Node* node) {
  const size_t num_inputs = node->inputs().size(), num_outputs = node->outputs().size();
  switch (node->kind()) {
    case c10::prim::ListConstruct: {
      c10::TypePtr element = node->output()->type()->expectRef<c10::ListType>().getElementType();
      return torch::jit::Operation([element, num_inputs](torch::jit::Stack& stack) {
        c10::impl::GenericList list(element);
        list.reserve(num_inputs);
        for (auto& v : torch::jit::last(stack, num_inputs)) list.push_back(std::move(v));
        torch::jit::drop(stack, num_inputs);
        stack.emplace_back(std::move(list));
      });
    }
    case c10::prim::TupleConstruct: {
      auto type = node->output()->type()->expect<c10::TupleType>();
      bool named = type->name().has_value();
      return torch::jit::Operation([type, named, num_inputs](torch::jit::Stack& stack) {
        std::vector<c10::IValue> elements(std::make_move_iterator(stack.end() - num_inputs),
                                          std::make_move_iterator(stack.end()));
        torch::jit::drop(stack, num_inputs);
        stack.emplace_back(named ? c10::ivalue::Tuple::createNamed(std::move(elements), type)
                                 : c10::ivalue::Tuple::create(std::move(elements)));
      });
    }
    case c10::prim::ListUnpack:
      return torch::jit::Operation([num_outputs](torch::jit::Stack& stack) {
        c10::List<c10::IValue> list = torch::jit::pop(stack).toList();
        TORCH_CHECK(list.size() == num_outputs, "expected a list of ", num_outputs, " elements, got ", list.size());
        for (size_t i = 0; i < num_outputs; ++i) stack.push_back(list.get(i));
      });
    case c10::prim::TupleUnpack:
      return torch::jit::Operation([](torch::jit::Stack& stack) {
        auto tuple = torch::jit::pop(stack).toTuple();
        for (const auto& e : tuple->elements()) stack.push_back(e);
      });
    default:
      return nullptr;
  }
}

std::string Describe(const Node* node) {
  std::ostringstream os;
  os << node->kind().toQualString();
  if (node->outputs().size() > 0) os << " (%" << node->output(0)->debugName() << ")";
  return os.str();
}

}  // namespace

CompiledGraph::CompiledGraph(std::shared_ptr<Graph> graph, const std::vector<Node*>& order, bool full_float32)
    : graph_(std::move(graph)) {
  std::unordered_map<const Value*, int> slot;
  auto slot_of = [&](const Value* v) {
    auto [it, inserted] = slot.emplace(v, static_cast<int>(initial_table_.size()));
    if (inserted) initial_table_.emplace_back();
    return it->second;
  };
  for (Value* in : graph_->inputs()) input_slots_.push_back(slot_of(in));
  for (Node* n : graph_->nodes()) {
    if (n->kind() == c10::prim::Constant) initial_table_[slot_of(n->output())] = *torch::jit::toIValue(n->output());
  }

  std::unordered_set<const Node*> placed;
  int false_slot = -1;  // full_float32: the `false` every allow_tf32 argument reads
  for (Node* n : order) {
    TORCH_CHECK(n->owningGraph() == graph_.get() && n->owningBlock() == graph_->block(),
                "CompiledGraph: node is not in the graph's top-level block");
    TORCH_CHECK(n->kind() != c10::prim::Constant && placed.insert(n).second,
                "CompiledGraph: order lists a constant or a node twice: ", Describe(n));
    Step step{nullptr, {}, {}, n, -1, nullptr, -1};
    std::vector<Value*> inputs(n->inputs().begin(), n->inputs().end());
    step.operation = PlumbingOperation(n);
    if (!step.operation && n->blocks().empty() && n->maybeOperator()) step.operation = OperationOf(n);
    if (!step.operation) step.operation = InterpretedOperation(n, &inputs);  // blocks, or interpreter-only prims
    for (Value* v : inputs) {
      TORCH_CHECK(slot.count(v), "CompiledGraph: ", Describe(n), " runs before its input %", v->debugName(),
                  " is produced");
      step.inputs.push_back(slot.at(v));
    }
    const c10::FunctionSchema* schema = full_float32 ? n->maybeSchema() : nullptr;
    for (size_t i = 0; schema && i < schema->arguments().size() && i < step.inputs.size(); ++i) {
      if (schema->arguments()[i].name() != "allow_tf32") continue;
      if (false_slot < 0) {
        false_slot = static_cast<int>(initial_table_.size());
        initial_table_.emplace_back(false);
      }
      step.inputs[i] = false_slot;
    }
    for (Value* v : n->outputs()) step.outputs.push_back(slot_of(v));
    steps_.push_back(std::move(step));
  }
  size_t expected = 0;
  for (Node* n : graph_->nodes()) expected += n->kind() != c10::prim::Constant;
  TORCH_CHECK(placed.size() == expected, "CompiledGraph: order lists ", placed.size(), " of ", expected, " nodes");
  for (Value* out : graph_->outputs()) output_slots_.push_back(slot_of(out));

  kept_.assign(initial_table_.size(), false);
  for (const auto& [v, s] : slot)
    if (v->node()->kind() == c10::prim::Constant) kept_[s] = true;
  if (false_slot >= 0) kept_[false_slot] = true;
  FinishConstruction();
}

CompiledGraph::CompiledGraph(std::shared_ptr<const AtenGraph> graph, const std::vector<int>& order)
    : aten_graph_(std::move(graph)) {
  const AtenGraph& g = *aten_graph_;
  initial_table_.assign(g.values.size(), c10::IValue());  // value ids are slots
  kept_.assign(g.values.size(), false);
  input_slots_ = g.inputs;
  output_slots_ = g.outputs;
  std::vector<bool> ready(g.values.size(), false), placed(g.nodes.size(), false);
  for (int v : g.inputs) ready[v] = true;
  for (int n : order) {
    TORCH_CHECK(n >= 0 && n < static_cast<int>(g.nodes.size()) && !placed[n],
                "CompiledGraph: order lists a node twice or one that does not exist: ", n);
    placed[n] = true;
    Step step{nullptr, {}, g.nodes[n].outputs, nullptr, n, nullptr, -1};
    step.operation = torch::jit::Operation(AtenStepOf(g, n, &step.inputs));
    int self_read = -1;
    if (AtenStep twin = InPlaceTwinOf(g, n, &self_read)) {
      step.in_place = std::move(twin);
      step.in_place_slot = step.inputs[self_read];
    }
    for (int v : step.inputs)
      TORCH_CHECK(ready[v], "CompiledGraph: ", g.Describe(n), " runs before its input (value ", v, ") is produced");
    for (int v : step.outputs) ready[v] = true;
    steps_.push_back(std::move(step));
  }
  TORCH_CHECK(steps_.size() == g.nodes.size(), "CompiledGraph: order lists ", steps_.size(), " of ", g.nodes.size(),
              " nodes");
  FinishConstruction();
}

void CompiledGraph::FinishConstruction() {
  for (int s : output_slots_) kept_[s] = true;
  for (int s : input_slots_) kept_[s] = true;  // the caller's tensors
  sequential_release_ = PlanReleases(std::vector<int>(steps_.size(), 0), std::vector<int>(steps_.size(), 0), 1);
}

std::string CompiledGraph::DescribeStep(const Step& step) const {
  return step.node ? Describe(step.node) : aten_graph_->Describe(step.aten_node);
}

CompiledGraph::ReleasePlan CompiledGraph::PlanReleases(const std::vector<int>& group_of_step,
                                                        const std::vector<int>& phase_of_step, int num_phases) const {
  TORCH_CHECK(group_of_step.size() == steps_.size() && phase_of_step.size() == steps_.size(),
              "PlanReleases: one group and one phase per step expected");
  const size_t n = initial_table_.size();
  std::vector<int> last_step(n, -1), last_phase(n, -1), group(n, -1);
  std::vector<bool> one_group(n, true);
  for (size_t i = 0; i < steps_.size(); ++i) {
    for (int s : steps_[i].inputs) {
      if (group[s] >= 0 && group[s] != group_of_step[i]) one_group[s] = false;
      group[s] = group_of_step[i];
      last_step[s] = std::max(last_step[s], static_cast<int>(i));
      last_phase[s] = std::max(last_phase[s], phase_of_step[i]);
    }
  }
  ReleasePlan plan{std::vector<std::vector<int>>(steps_.size()), std::vector<std::vector<int>>(num_phases), {}};
  for (size_t s = 0; s < n; ++s) {
    if (last_step[s] < 0 || kept_[s]) continue;
    if (one_group[s]) plan.after_step[last_step[s]].push_back(static_cast<int>(s));
    else plan.after_phase[last_phase[s]].push_back(static_cast<int>(s));
  }
  plan.writes_in_place.assign(steps_.size(), false);
  for (size_t i = 0; i < steps_.size(); ++i) {
    const std::vector<int>& cleared = plan.after_step[i];
    plan.writes_in_place[i] = steps_[i].in_place_slot >= 0 &&
                              std::find(cleared.begin(), cleared.end(), steps_[i].in_place_slot) != cleared.end();
  }
  return plan;
}

CompiledGraph::Table CompiledGraph::NewTable(std::vector<c10::IValue> inputs) const {
  if (inputs.size() != input_slots_.size()) {
    std::string names;
    if (graph_)
      for (torch::jit::Value* v : graph_->inputs()) names += (names.empty() ? "" : ", ") + v->debugName();
    throw InputError("the model takes " + std::to_string(input_slots_.size()) + " input(s) (" + names + "), got " +
                     std::to_string(inputs.size()) + "; pass one example input per forward() argument");
  }
  Table table = initial_table_;
  for (size_t i = 0; i < inputs.size(); ++i) table[input_slots_[i]] = std::move(inputs[i]);
  return table;
}

// Whether `step`, whose first argument the caller clears right after it (ReleasePlan::writes_in_place),
// may write its result into that argument: only the table holds the tensor (no other value, view or
// list shares its memory), it is dense, needs no gradient, is no inference tensor outside inference
// mode, and every other tensor the step reads broadcasts into its sizes (so the result has them, at any
// shape the graph runs).
bool CompiledGraph::MayWriteInPlace(const Step& step, const Table& table) const {
  const c10::IValue& value = table[step.in_place_slot];
  if (!value.isTensor()) return false;
  const at::Tensor& t = value.toTensor();
  if (!t.defined() || t.layout() != at::kStrided || t.use_count() != 1 || !t.has_storage() ||
      t.storage().use_count() != 1 || t.requires_grad() || t.is_neg() || t.is_conj() ||
      !t.is_non_overlapping_and_dense() || (t.is_inference() && !c10::InferenceMode::is_enabled()))
    return false;
  for (int s : step.inputs) {
    if (s == step.in_place_slot || !table[s].isTensor()) continue;
    const at::Tensor& other = table[s].toTensor();
    if (other.dim() > t.dim()) return false;
    for (int64_t d = 1; d <= other.dim(); ++d)
      if (other.size(-d) != 1 && other.size(-d) != t.size(-d)) return false;
  }
  return true;
}

void CompiledGraph::RunStep(size_t index, Table& table, torch::jit::Stack& stack, const ReleasePlan* release) const {
  const Step& step = steps_[index];
  stack.clear();
  const bool in_place = release && release->writes_in_place[index] && MayWriteInPlace(step, table);
  for (int s : step.inputs) stack.push_back(in_place && s == step.in_place_slot ? std::move(table[s]) : table[s]);
  try {
    if (in_place) {
      step.in_place(stack);
    } else {
      step.operation(stack);
    }
  } catch (const std::exception& e) {
    throw InputError("running " + DescribeStep(step) + " failed: " + FirstLineOf(e) +
                     "; check that the inputs match what the model expects (shape, dtype, device)");
  }
  TORCH_CHECK(stack.size() == step.outputs.size(), "CompiledGraph: ", DescribeStep(step), " returned ",
              stack.size(), " values, expected ", step.outputs.size());
  for (size_t i = 0; i < step.outputs.size(); ++i) table[step.outputs[i]] = std::move(stack[i]);
}

std::vector<c10::IValue> CompiledGraph::Outputs(const Table& table) const {
  std::vector<c10::IValue> outputs;
  outputs.reserve(output_slots_.size());
  for (int s : output_slots_) outputs.push_back(table[s]);
  return outputs;
}

std::vector<c10::IValue> CompiledGraph::Run(std::vector<c10::IValue> inputs, const Observer* observer) const {
  Table table = NewTable(std::move(inputs));
  torch::jit::Stack stack;
  for (size_t i = 0; i < steps_.size(); ++i) {
    std::vector<c10::IValue> observed_inputs;
    if (observer) {
      for (int s : steps_[i].inputs) observed_inputs.push_back(table[s]);
    }
    RunStep(i, table, stack, observer ? nullptr : &sequential_release_);
    if (observer) {
      std::vector<c10::IValue> outputs;
      for (int s : steps_[i].outputs) outputs.push_back(table[s]);
      (*observer)(steps_[i].node, observed_inputs, outputs);
    }
    for (int s : sequential_release_.after_step[i]) table[s] = c10::IValue();
  }
  return Outputs(table);
}

}  // namespace autograph
