#pragma once
// Program: what an optimized module carries — the lowered graph, its operators and edges, the
// schedule and the signature of the input tensors it was planned for — as a TorchScript custom class
// (__torch__.torch.classes.autograph.Program) whose pickled state is versioned. Streams, events,
// thread pools and CUDA Graphs are built after loading, never pickled.
#include <ATen/core/Tensor.h>
#include <torch/custom_class.h>

#include <atomic>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <shared_mutex>
#include <string>
#include <tuple>
#include <vector>

#include "core/op_graph.h"
#include "core/schedule.h"
#include "executor/stage_executor.h"

namespace autograph {

// One tensor of the inputs, in the order CollectTensors finds them in the forward's arguments
// (depth first through tuples, lists and dict values).
struct InputSignature {
  std::vector<int64_t> shape;
  c10::ScalarType dtype = c10::ScalarType::Float;
};

// The signature of the tensors inside a forward's arguments (CollectTensors order): what a Program
// built for these example arguments checks.
std::vector<InputSignature> InputSignaturesOf(const std::vector<c10::IValue>& arguments);

// Plans a schedule over `graph` (a Program's) for a call's arguments by the options of optimize
// (`options`: OptimizeOptionsToJson's JSON text); nullopt when the graph imports other operators at
// these shapes. The planning library registers it (SetShapePlanner); the runtime alone has none.
using ShapePlanner = std::optional<Schedule> (*)(const OpGraph& graph, const std::vector<c10::IValue>& arguments,
                                                 const std::string& options);
void SetShapePlanner(ShapePlanner planner);

class Program : public torch::CustomClassHolder {
 public:
  // 2: the plan names each tensor constant's layout (oneDNN constants, from prepack_onednn).
  // 3: each operator a merged kernel may take keeps its merge candidate (OpNode::merge); a plan of
  // version 1 or 2 loads, but one with merge stages says to re-optimize (ValidateSchedule's message).
  // 4: the graph's inputs may be any TorchScript values (tuples, lists, dicts, numbers, None); the
  // signature lists the tensors inside them, and optimized modules call autograph::call.
  // 5: constant lists of tensors (Tensor[], Tensor?[]) are lifted like tensor constants, their
  // elements among the tensor constants and their shape in the layout ("optional_tensor_list:nt").
  // A build that reads fewer versions refuses newer ones with a clear message.
  static constexpr int64_t kFormatVersion = 5;
  static constexpr int64_t kOldestFormatVersion = 1;
  // (format version, graph IR, tensor constants in node order, JSON of operators/edges/schedule/inputs)
  using State = std::tuple<int64_t, std::string, std::vector<at::Tensor>, std::string>;

  Program(const OpGraph& graph, Schedule schedule, std::vector<InputSignature> inputs, ExecutorOptions options);
  // Throws Error naming what is wrong: another format version, a graph that does not parse, a
  // schedule that does not validate.
  static c10::intrusive_ptr<Program> FromState(State state);
  State ToState() const;

  // Runs the graph on the forward's arguments (any structure) and returns what it returns. Thread-safe.
  // Checks the number of arguments, the device of the tensors inside them and, when they hold as
  // many tensors as the example did, each one's rank and dtype (InputError); other sizes, and other
  // numbers of tensors (an optional one left None, a list of another length), run with a one-time
  // note that the schedule was planned for other shapes.
  c10::IValue Call(std::vector<c10::IValue> arguments) const;
  // What modules optimized before format 4 call (autograph::run): tensor arguments, the returned
  // tensors flattened.
  std::vector<at::Tensor> Run(const std::vector<at::Tensor>& inputs) const;

  // Another schedule, for inputs of these shapes (OptimizeOptions::shapes): the same tensors, ranks and
  // dtypes as the example's. Throws Error when it does not fit the graph or the signature.
  void AddPlan(std::vector<InputSignature> inputs, Schedule schedule);
  // Which plan runs tensors of these shapes: 0 is the example's, k the k-th added. The plan made for
  // exactly these shapes, else the nearest: the least sum over sizes of |log(size / planned size)|.
  size_t PlanFor(const std::vector<at::Tensor>& tensors) const;
  size_t num_plans() const;
  // Plans made at call time (OptimizeOptions::plan_new_shapes): a call whose tensors match no plan
  // exactly (same ranks and dtypes as the example's) has one made for them by the registered
  // ShapePlanner, by `options` (OptimizeOptionsToJson text), up to `limit` attempts in this process
  // (one that finds no plan counts: it took a run and a search); the call
  // waits for it, and calls of those shapes on other threads wait too. Without a planner, beyond the
  // limit, or where the planner finds none (once per shape), the nearest plan runs. Saved with the
  // program, the plans made so far as well.
  void PlanNewShapes(int limit, std::string options);

  const OpGraph& graph() const { return graph_; }
  const Schedule& schedule() const { return schedule_; }
  const ExecutorOptions& options() const { return options_; }
  const std::vector<InputSignature>& inputs() const { return inputs_; }

  struct EmptyTag {};
  explicit Program(EmptyTag) {}  // for FromState, which fills the fields

 private:
  static c10::intrusive_ptr<Program> LoadState(State state);  // FromState, before its errors are wrapped
  void BuildExecutor();
  // Also warns once when the tensors' sizes are not those of `plan`, the one that runs them (PlanFor).
  void CheckInputTensors(const std::vector<at::Tensor>& tensors, size_t plan) const;
  // PlanFor, after planning these tensors' shapes when plan_new_shapes allows and none fits exactly.
  size_t PlanOrPlanNew(const std::vector<c10::IValue>& arguments, const std::vector<at::Tensor>& tensors) const;
  bool Fits(const std::vector<at::Tensor>& tensors, size_t plan) const;  // plan made for exactly these sizes
  void InsertPlan(std::vector<InputSignature> inputs, Schedule schedule) const;  // AddPlan, for call time too

  // A plan for other shapes: its signature, schedule and executor.
  struct OtherPlan {
    std::vector<InputSignature> inputs;
    Schedule schedule;
    std::unique_ptr<StageExecutor> executor;
  };
  const StageExecutor& ExecutorOf(size_t plan) const;  // plan: as PlanFor numbers them

  OpGraph graph_;
  Schedule schedule_;
  std::vector<InputSignature> inputs_;
  ExecutorOptions options_;
  std::unique_ptr<StageExecutor> executor_;
  // Grows at call time (plan_new_shapes): read under a shared lock, added to under a unique one. An
  // executor, once added, stays where it is (the vector holds pointers to them).
  mutable std::vector<OtherPlan> other_plans_;
  mutable std::shared_mutex plans_mutex_;
  int plan_new_shapes_ = 0;
  std::string planning_options_;  // OptimizeOptionsToJson text
  mutable std::mutex planning_mutex_;  // one plan made at a time; guards unplannable_ and planned_new_'s increments
  mutable std::atomic<int> planned_new_{0};  // attempts so far
  mutable std::set<std::vector<std::vector<int64_t>>> unplannable_;  // shapes the planner found no plan for
  mutable std::once_flag other_shape_note_;
  mutable std::once_flag planner_note_;
};

}  // namespace autograph
