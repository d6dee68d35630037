#include "executor/program.h"

// TorchScript: the Program owns the lowered graph; saving and loading name its nodes and read the
// merged operators' constant weights back from them.
#include <torch/csrc/jit/ir/constants.h>
#include <torch/csrc/jit/ir/ir.h>

#include <atomic>
#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>
#include <unordered_map>

#include "autograph/error.h"
#include "core/operator_flops.h"
#include "executor/float32_switches.h"
#include "executor/graph_serialization.h"
#include "executor/merge_candidate_json.h"
#include "executor/plan_integers.h"

namespace autograph {

namespace {

// A saved merge candidate's tensors are the anchor's constant weight and bias (inputs 1 and 2 of
// every operator a merge takes), restored from the graph.
MergeCandidate MergeCandidateOfAnchor(const nlohmann::json& json, const torch::jit::Node* anchor) {
  MergeCandidate c = MergeCandidateFromJson(json);
  auto constant = [&](size_t input) -> at::Tensor {
    const auto value = input < anchor->inputs().size() ? torch::jit::toIValue(anchor->input(input)) : std::nullopt;
    if (!value || !value->isTensor())
      throw Error("corrupted program: a merged operator's weight or bias is not a constant of its node");
    return value->toTensor();
  };
  c.weight = constant(1);
  if (json.at("bias").get<bool>()) c.bias = constant(2);
  return c;
}

std::vector<InputSignature> SignatureFromJson(const nlohmann::json& list) {
  std::vector<InputSignature> signature;
  for (const auto& in : list) {
    InputSignature sig;
    sig.shape = PlanInts(in.at("shape"));
    const std::string dtype = in.at("dtype").get<std::string>();
    std::optional<c10::ScalarType> type = ScalarTypeFromString(dtype);
    if (!type) throw Error("unknown dtype '" + dtype + "'");
    sig.dtype = *type;
    signature.push_back(std::move(sig));
  }
  return signature;
}

OpKind KindFromString(const std::string& name) {
  if (std::optional<OpKind> kind = OpKindFromString(name)) return *kind;
  throw Error("corrupted program: unknown operator kind '" + name + "'");
}

}  // namespace

std::vector<InputSignature> InputSignaturesOf(const std::vector<c10::IValue>& arguments) {
  std::vector<at::Tensor> tensors;
  for (const c10::IValue& v : arguments) CollectTensors(v, &tensors);
  std::vector<InputSignature> signature;
  for (const at::Tensor& t : tensors) signature.push_back(InputSignature{t.sizes().vec(), t.scalar_type()});
  return signature;
}

Program::Program(const OpGraph& graph, Schedule schedule, std::vector<InputSignature> inputs, ExecutorOptions options)
    : graph_(graph), schedule_(std::move(schedule)), inputs_(std::move(inputs)), options_(options) {
  BuildExecutor();
}

namespace {
std::atomic<ShapePlanner> registered_planner{nullptr};
}  // namespace

void SetShapePlanner(ShapePlanner planner) { registered_planner.store(planner); }

void Program::BuildExecutor() { executor_ = std::make_unique<StageExecutor>(graph_, schedule_, options_); }

size_t Program::num_plans() const {
  std::shared_lock<std::shared_mutex> lock(plans_mutex_);
  return 1 + other_plans_.size();
}

void Program::PlanNewShapes(int limit, std::string options) {
  if (limit < 0) throw Error("plan_new_shapes is " + std::to_string(limit) + "; it counts plans, 0 or more");
  plan_new_shapes_ = limit;
  planning_options_ = std::move(options);
}

void Program::AddPlan(std::vector<InputSignature> inputs, Schedule schedule) {
  InsertPlan(std::move(inputs), std::move(schedule));
}

void Program::InsertPlan(std::vector<InputSignature> inputs, Schedule schedule) const {
  if (inputs.size() != inputs_.size())
    throw Error("a plan for other shapes lists " + std::to_string(inputs.size()) + " input tensors, the example " +
                std::to_string(inputs_.size()));
  for (size_t i = 0; i < inputs.size(); ++i)
    if (inputs[i].shape.size() != inputs_[i].shape.size() || inputs[i].dtype != inputs_[i].dtype)
      throw Error("a plan for other shapes gives input " + std::to_string(i) + " shape " +
                  ShapeString(inputs[i].shape) + " " + c10::toString(inputs[i].dtype) + ", the example " +
                  ShapeString(inputs_[i].shape) + " " + c10::toString(inputs_[i].dtype) +
                  ": shapes may change sizes, not ranks or dtypes");
  auto executor = std::make_unique<StageExecutor>(graph_, schedule, options_);  // validates the schedule
  std::unique_lock<std::shared_mutex> lock(plans_mutex_);
  other_plans_.push_back(OtherPlan{std::move(inputs), std::move(schedule), std::move(executor)});
}

bool Program::Fits(const std::vector<at::Tensor>& tensors, size_t plan) const {
  std::shared_lock<std::shared_mutex> lock(plans_mutex_);
  const std::vector<InputSignature>& planned = plan == 0 ? inputs_ : other_plans_[plan - 1].inputs;
  if (tensors.size() != planned.size()) return false;
  for (size_t i = 0; i < tensors.size(); ++i)
    if (tensors[i].sizes() != at::IntArrayRef(planned[i].shape)) return false;
  return true;
}

size_t Program::PlanOrPlanNew(const std::vector<c10::IValue>& arguments, const std::vector<at::Tensor>& tensors) const {
  size_t plan = PlanFor(tensors);
  // Past the limit no call waits for the planning lock.
  if (planned_new_.load() >= plan_new_shapes_ || Fits(tensors, plan) || tensors.size() != inputs_.size()) return plan;
  std::vector<std::vector<int64_t>> shapes;
  for (size_t i = 0; i < tensors.size(); ++i) {
    // Only what the example's signature allows is planned; CheckInputTensors says what is wrong.
    if (tensors[i].dim() != static_cast<int64_t>(inputs_[i].shape.size()) || tensors[i].scalar_type() != inputs_[i].dtype)
      return plan;
    shapes.push_back(tensors[i].sizes().vec());
  }
  std::lock_guard<std::mutex> planning(planning_mutex_);
  plan = PlanFor(tensors);  // another call may have planned these shapes meanwhile
  if (Fits(tensors, plan) || planned_new_ >= plan_new_shapes_ || unplannable_.count(shapes)) return plan;
  const ShapePlanner planner = registered_planner.load();
  if (!planner) {
    std::call_once(planner_note_, [] {
      TORCH_WARN("autograph: plan_new_shapes is set, but this process has no planner (only the autograph runtime "
                 "is loaded); new shapes run the nearest plan");
    });
    return plan;
  }
  // Every attempt counts against the limit, one that finds no plan too: it took a run and a search.
  ++planned_new_;
  std::optional<Schedule> schedule;
  try {
    schedule = planner(graph_, arguments, planning_options_);
  } catch (const std::exception& e) {  // the call still runs, on the nearest plan; said once per shape
    TORCH_WARN("autograph: planning input shape ", ShapeString(shapes[0]), " failed (", FirstLineOf(e),
               "); such calls run the nearest plan");
  }
  if (!schedule) {
    unplannable_.insert(shapes);
    return plan;
  }
  std::vector<InputSignature> signature;
  for (const at::Tensor& t : tensors) signature.push_back(InputSignature{t.sizes().vec(), t.scalar_type()});
  InsertPlan(std::move(signature), std::move(*schedule));
  return num_plans() - 1;
}

size_t Program::PlanFor(const std::vector<at::Tensor>& tensors) const {
  std::shared_lock<std::shared_mutex> lock(plans_mutex_);
  if (other_plans_.empty() || tensors.size() != inputs_.size()) return 0;
  auto distance = [&](const std::vector<InputSignature>& planned) {
    double d = 0;
    for (size_t i = 0; i < tensors.size(); ++i) {
      if (tensors[i].dim() != static_cast<int64_t>(planned[i].shape.size()))
        return std::numeric_limits<double>::infinity();
      for (int64_t k = 0; k < tensors[i].dim(); ++k) {
        // +1: a size of 0 is one step from 1, not infinitely far.
        d += std::abs(std::log((tensors[i].size(k) + 1.0) / (planned[i].shape[k] + 1.0)));
      }
    }
    return d;
  };
  size_t best = 0;
  double best_distance = distance(inputs_);
  for (size_t k = 0; k < other_plans_.size(); ++k) {
    const double d = distance(other_plans_[k].inputs);
    if (d < best_distance) best = k + 1, best_distance = d;
  }
  return best;
}

const StageExecutor& Program::ExecutorOf(size_t plan) const {
  std::shared_lock<std::shared_mutex> lock(plans_mutex_);
  return plan == 0 ? *executor_ : *other_plans_[plan - 1].executor;
}

Program::State Program::ToState() const {
  SerializedGraph serialized = SerializeGraph(*graph_.graph());
  // Nodes are named by their position among the non-constant top-level nodes: the one order that
  // serialization keeps.
  std::unordered_map<const torch::jit::Node*, int> position;
  int index = 0;
  for (const torch::jit::Node* n : graph_.graph()->nodes())
    if (n->kind() != c10::prim::Constant) position[n] = index++;
  nlohmann::json ops = nlohmann::json::array(), edges = nlohmann::json::array(), inputs = nlohmann::json::array();
  for (const OpNode& op : graph_.nodes()) {
    std::vector<int> nodes;
    for (const torch::jit::Node* n : op.jit_nodes) nodes.push_back(position.at(n));
    nlohmann::json entry = {{"op", op.op}, {"kind", ToString(op.kind)}, {"nodes", nodes}, {"anchor", position.at(op.anchor)}};
    if (op.merge.kind != MergeCandidate::Kind::None) entry["merge"] = MergeCandidateToJson(op.merge);
    ops.push_back(std::move(entry));
    for (int s : graph_.succs(op.id)) edges.push_back({op.id, s});
  }
  auto signature_json = [](const std::vector<InputSignature>& signature) {
    nlohmann::json list = nlohmann::json::array();
    for (const InputSignature& in : signature) list.push_back({{"shape", in.shape}, {"dtype", c10::toString(in.dtype)}});
    return list;
  };
  inputs = signature_json(inputs_);
  nlohmann::json other_plans = nlohmann::json::array();
  {
    std::shared_lock<std::shared_mutex> lock(plans_mutex_);
    for (const OtherPlan& p : other_plans_)
      other_plans.push_back({{"inputs", signature_json(p.inputs)}, {"schedule", ScheduleToJson(p.schedule)}});
  }
  nlohmann::json plan = {{"operators", ops},
                         {"edges", edges},
                         {"schedule", ScheduleToJson(schedule_)},
                         {"inputs", inputs},
                         {"device", options_.device.str()},
                         {"cuda_graph", options_.cuda_graph},
                         {"max_cuda_graphs", options_.max_cuda_graphs},
                         {"constant_layouts", serialized.constant_layouts}};
  if (options_.tf32) plan["tf32"] = true;  // absent: float32 as the process's switches say (any version)
  if (!other_plans.empty()) plan["other_plans"] = std::move(other_plans);  // absent: one plan (any version)
  if (plan_new_shapes_ > 0)  // absent: none planned at call time (any version)
    plan["plan_new_shapes"] = {{"limit", plan_new_shapes_}, {"options", planning_options_}};
  return State(kFormatVersion, std::move(serialized.ir), std::move(serialized.tensor_constants), plan.dump());
}

c10::intrusive_ptr<Program> Program::FromState(State state) {
  try {
    return LoadState(std::move(state));
  } catch (const Error&) {
    throw;
  } catch (const std::exception& e) {  // TorchScript's own errors on a graph that parsed (an unknown operator, ...)
    throw Error("corrupted program: " + FirstLineOf(e));
  }
}

c10::intrusive_ptr<Program> Program::LoadState(State state) {
  auto& [version, ir, constants, plan_text] = state;
  if (version < kOldestFormatVersion || version > kFormatVersion) {
    throw Error("this optimized module holds an autograph program of format version " + std::to_string(version) +
                ", but this build reads versions " + std::to_string(kOldestFormatVersion) + " to " +
                std::to_string(kFormatVersion) +
                "; re-run `autograph optimize` on the original model");
  }
  auto program = c10::make_intrusive<Program>(EmptyTag{});
  nlohmann::json plan;
  std::vector<std::string> layouts;  // absent before version 2: every constant strided
  try {
    plan = nlohmann::json::parse(plan_text);
    if (plan.contains("constant_layouts")) layouts = plan.at("constant_layouts").get<std::vector<std::string>>();
  } catch (const nlohmann::json::exception& e) {
    throw Error(std::string("corrupted program: ") + e.what());
  }
  auto graph = DeserializeGraph(SerializedGraph{ir, constants, layouts});
  std::vector<torch::jit::Node*> nodes;
  for (torch::jit::Node* n : graph->nodes())
    if (n->kind() != c10::prim::Constant) nodes.push_back(n);
  program->graph_ = OpGraph(graph);
  try {
    for (const auto& op : plan.at("operators")) {
      OpNode node;
      node.op = op.at("op").get<std::string>();
      node.kind = KindFromString(op.at("kind").get<std::string>());
      if (!op.at("nodes").is_array()) throw Error("corrupted program: an operator's nodes are not a list");
      for (const nlohmann::json& p : op.at("nodes")) node.jit_nodes.push_back(nodes.at(PlanIndex(p)));
      node.anchor = nodes.at(PlanIndex(op.at("anchor")));
      if (op.contains("merge")) node.merge = MergeCandidateOfAnchor(op.at("merge"), node.anchor);
      program->graph_.AddNode(std::move(node));
    }
    for (const auto& e : plan.at("edges")) program->graph_.AddEdge(PlanIndex(e.at(0)), PlanIndex(e.at(1)));
    program->schedule_ = ScheduleFromJson(plan.at("schedule"));
    for (const Stage& stage : program->schedule_.stages)
      if (version < 3 && stage.strategy == StageStrategy::Merge)
        throw Error("this optimized module holds an autograph program of format version " + std::to_string(version) +
                    ", whose merged kernels this build cannot rebuild (it needs version 3); re-run "
                    "`autograph optimize` on the original model");
    program->inputs_ = SignatureFromJson(plan.at("inputs"));
    program->options_.device = c10::Device(plan.at("device").get<std::string>());
    program->options_.cuda_graph = plan.at("cuda_graph").get<bool>();
    // Absent before 2026-11-26: the default.
    program->options_.max_cuda_graphs = plan.value("max_cuda_graphs", program->options_.max_cuda_graphs);
    if (program->options_.max_cuda_graphs < 1) throw Error("corrupted program: max_cuda_graphs below 1");
    program->options_.tf32 = plan.value("tf32", false);
  } catch (const nlohmann::json::exception& e) {
    throw Error(std::string("corrupted program: ") + e.what());
  } catch (const std::out_of_range& e) {
    throw Error(std::string("corrupted program: an operator names a node that does not exist (") + e.what() + ")");
  } catch (const c10::Error& e) {
    throw Error("corrupted program: " + FirstLineOf(e));
  }
  // Before format 4 every graph input was one tensor; now the signature lists the tensors inside them.
  if (version < 4 && program->inputs_.size() != graph->inputs().size()) {
    throw Error("corrupted program: " + std::to_string(program->inputs_.size()) + " input signatures for a graph of " +
                std::to_string(graph->inputs().size()) + " inputs");
  }
  try {
    program->BuildExecutor();  // validates the schedule against the operators and their nodes
    if (plan.contains("other_plans"))
      for (const auto& other : plan.at("other_plans"))
        program->AddPlan(SignatureFromJson(other.at("inputs")), ScheduleFromJson(other.at("schedule")));
    if (plan.contains("plan_new_shapes"))
      program->PlanNewShapes(plan.at("plan_new_shapes").at("limit").get<int>(),
                             plan.at("plan_new_shapes").at("options").get<std::string>());
  } catch (const Error& e) {
    throw Error(std::string("corrupted program: ") + e.what());
  } catch (const nlohmann::json::exception& e) {
    throw Error(std::string("corrupted program: ") + e.what());
  } catch (const c10::Error& e) {
    throw Error("corrupted program: " + FirstLineOf(e));
  }
  return program;
}

void Program::CheckInputTensors(const std::vector<at::Tensor>& tensors, size_t plan) const {
  std::shared_lock<std::shared_mutex> lock(plans_mutex_);
  const std::vector<InputSignature>& planned = plan == 0 ? inputs_ : other_plans_[plan - 1].inputs;
  // Arguments may hold another number of tensors than the example did (an optional tensor left None,
  // a list of another length, a dict with other keys): the original accepts those, so the program
  // does too, checking only the device; the same number is checked tensor by tensor.
  const bool matched = tensors.size() == inputs_.size();
  bool other_shape = !matched;
  for (size_t i = 0; i < tensors.size(); ++i) {
    const at::Tensor& t = tensors[i];
    const std::string where = "input " + std::to_string(i);
    const c10::Device& device = options_.device;
    if (t.device().type() != device.type() || (device.has_index() && t.device().index() != device.index())) {
      throw InputError(where + " is on " + t.device().str() + ", but the model was optimized for " + device.str() +
                       "; move the input with .to(\"" + device.str() + "\") or re-optimize for that device");
    }
    if (!matched) continue;
    const InputSignature& sig = inputs_[i];
    if (t.dim() != static_cast<int64_t>(sig.shape.size())) {
      throw InputError(where + " has rank " + std::to_string(t.dim()) + " (shape " + ShapeString(t.sizes()) +
                       "), but the model was optimized for rank " + std::to_string(sig.shape.size()) + " (shape " +
                       ShapeString(sig.shape) + ")");
    }
    if (t.scalar_type() != sig.dtype) {
      throw InputError(where + " has dtype " + c10::toString(t.scalar_type()) + ", but the model was optimized for " +
                       c10::toString(sig.dtype));
    }
    other_shape |= t.sizes() != at::IntArrayRef(planned[i].shape);  // the plan that runs them
  }
  if (other_shape) {
    std::call_once(other_shape_note_, [&] {
      TORCH_WARN("autograph: the schedule was planned for input shape ",
                 inputs_.empty() ? std::string("(no tensors)") : ShapeString(inputs_[0].shape),
                 matched ? "" : " among " + std::to_string(inputs_.size()) + " input tensors",
                 other_plans_.empty() ? "" : " (and " + std::to_string(other_plans_.size()) + " more shapes)",
                 "; other shapes run the nearest one's schedule: correct, but maybe slower — optimize with `shapes` "
                 "listing the shapes you serve",
                 plan_new_shapes_ > 0 ? " (or a larger plan_new_shapes: its " + std::to_string(plan_new_shapes_) +
                                            " plans made at call time are made)"
                                      : "");
    });
  }
}

c10::IValue Program::Call(std::vector<c10::IValue> arguments) const {
  const size_t expected = graph_.graph()->inputs().size();
  if (arguments.size() != expected) {
    throw InputError("the optimized module takes " + std::to_string(expected) + " argument(s), got " +
                     std::to_string(arguments.size()));
  }
  std::vector<at::Tensor> tensors;
  for (const c10::IValue& v : arguments) CollectTensors(v, &tensors);
  const size_t plan = PlanOrPlanNew(arguments, tensors);
  CheckInputTensors(tensors, plan);
  const Tf32Scope tf32(options_.tf32 && options_.device.is_cuda());
  std::vector<c10::IValue> outputs = ExecutorOf(plan).Run(std::move(arguments));
  if (outputs.size() == 1) return std::move(outputs[0]);
  return c10::ivalue::Tuple::create(std::move(outputs));
}

std::vector<at::Tensor> Program::Run(const std::vector<at::Tensor>& inputs) const {
  if (inputs.size() != inputs_.size()) {
    throw InputError("the optimized module takes " + std::to_string(inputs_.size()) + " input(s), got " +
                     std::to_string(inputs.size()));
  }
  for (size_t i = 0; i < inputs.size(); ++i)
    if (!inputs[i].defined()) throw InputError("input " + std::to_string(i) + " is undefined");
  std::vector<c10::IValue> arguments(inputs.begin(), inputs.end());
  const size_t plan = PlanOrPlanNew(arguments, inputs);
  CheckInputTensors(inputs, plan);
  const Tf32Scope tf32(options_.tf32 && options_.device.is_cuda());
  auto outputs = ExecutorOf(plan).Run(std::move(arguments));
  std::vector<at::Tensor> flat;
  for (const auto& v : outputs) CollectTensors(v, &flat);
  return flat;
}

}  // namespace autograph
