// StagePlan: a Schedule compiled into steps, stream indices, events and release points, once, for
// both backends. A Merge stage becomes one group on stream 0 running one merged kernel, its
// weights merged here from the operators' merge candidates — frozen constants of a TorchScript graph
// (so a loaded Program rebuilds them: they are never pickled), or an exported program's weights bound
// by its AtenProgram — once per distinct set of weights (an unrolled RNN merges the same ones each step).
#include <ATen/ATen.h>
#include <c10/core/impl/DeviceGuardImplInterface.h>
// TorchScript: a plan's steps are the graph's nodes (Operations); merged kernels replace their anchors.
#include <torch/csrc/jit/ir/ir.h>

#include <algorithm>
#include <map>
#include <set>

#include "autograph/error.h"
#include "core/aten_graph.h"
#include "executor/stage_executor.h"
#include "executor/validate_schedule.h"

namespace autograph {

namespace {

using torch::jit::Node;
using torch::jit::Value;

// The nodes of every operator, stage by stage, group by group. In a Merge stage: the nodes before
// each operator's anchor (convolution or linear), then the anchors side by side (the merged kernel
// replaces them), then the nodes after. No node of one op reads another op of the stage (no edges
// inside a stage), and each op's nodes keep their order, so data dependences hold. Validates first:
// the plan relies on it.
std::vector<Node*> ScheduleOrder(const OpGraph& graph, const Schedule& schedule) {
  ValidateSchedule(schedule, graph);
  std::vector<Node*> order;
  for (const Stage& stage : schedule.stages) {
    if (stage.strategy == StageStrategy::Merge) {
      std::vector<Node*> before, anchors, after;
      for (const auto& group : stage.groups) {
        const OpNode& op = graph.node(group[0]);
        bool past_anchor = false;
        for (Node* n : op.jit_nodes) {
          if (n == op.anchor) {
            anchors.push_back(n);
            past_anchor = true;
          } else {
            (past_anchor ? after : before).push_back(n);
          }
        }
      }
      for (const auto* part : {&before, &anchors, &after}) order.insert(order.end(), part->begin(), part->end());
      continue;
    }
    for (const auto& group : stage.groups)
      for (int op : group) order.insert(order.end(), graph.node(op).jit_nodes.begin(), graph.node(op).jit_nodes.end());
  }
  return order;
}

// Whether the slice written for a merged operator's output `value` must get memory of its own.
//
// The slices are narrow views of the merged output (no copy). At batch 1 a channel slice of an
// NCHW tensor is contiguous anyway; at batch > 1 it is strided, as a slice of a merged linear's
// last dimension always is. ATen kernels read strided tensors:
// elementwise ops write a fresh dense output, an in-place op writes only its own slice (disjoint
// from the others' channels, so it cannot corrupt them), a following convolution copies into
// contiguous memory internally as it would for any strided input. Copying every slice up front
// would add one kernel per convolution to every run and undo much of what merging saves, so views
// stay views — except for readers that rely on the layout of a fresh tensor, which get a
// contiguous copy (.contiguous(): a no-op whenever the slice is already contiguous, e.g. batch 1):
// view-like ops that fail on or reinterpret strided memory, resizing ops, graph outputs (the caller
// may .view() them, and should not keep the whole merged buffer alive through one slice), and
// anything that is not an aten op (block returns of control flow, custom ops).
bool NeedsOwnMemory(const Value* value, int depth = 0) {
  static const std::set<c10::Symbol> layout_readers = {
      c10::aten::view,       c10::aten::view_as, c10::aten::_unsafe_view,  c10::aten::as_strided,
      c10::aten::as_strided_, c10::aten::resize_, c10::aten::resize_as_, c10::aten::set_,
      c10::aten::_reshape_alias};
  for (const torch::jit::Use& use : value->uses()) {
    const Node* user = use.user;
    if (user->kind() == c10::prim::ListConstruct || user->kind() == c10::prim::TupleConstruct) {
      if (depth >= 4 || NeedsOwnMemory(user->output(), depth + 1)) return true;  // cat(...), tuple returns
      continue;
    }
    if (!user->kind().is_aten() || layout_readers.count(user->kind())) return true;
  }
  return false;
}

// The same for an exported program's value: a graph output, or a reader that is not an ATen
// operator (getitem, a compiled part, a custom op) or relies on a fresh tensor's layout.
bool NeedsOwnMemory(const AtenGraph& g, int value) {
  static const std::set<std::string> layout_readers = {
      "aten::view",        "aten::view_as",   "aten::_unsafe_view", "aten::as_strided", "aten::as_strided_",
      "aten::resize_",     "aten::resize_as_", "aten::set_",        "aten::_reshape_alias"};
  if (std::find(g.outputs.begin(), g.outputs.end(), value) != g.outputs.end()) return true;
  for (const AtenNode& node : g.nodes) {
    bool reads = false;
    auto note = [&](const AtenArgument& a) {
      reads |= a.kind == AtenArgument::Kind::Value && a.value == value;
      for (const auto& v : a.values) reads |= v == value;
    };
    for (const AtenArgument& a : node.args) note(a);
    for (const auto& [name, a] : node.kwargs) note(a);
    if (reads && (node.op.rfind("aten::", 0) != 0 || layout_readers.count(node.op))) return true;
  }
  return false;
}

// The nodes of an operator before its anchor.
size_t NodesBeforeAnchor(const OpNode& op) {
  if (op.aten_anchor >= 0)
    return std::find(op.aten_nodes.begin(), op.aten_nodes.end(), op.aten_anchor) - op.aten_nodes.begin();
  return std::find(op.jit_nodes.begin(), op.jit_nodes.end(), op.anchor) - op.jit_nodes.begin();
}

std::string MergedLabel(const std::vector<int>& ops, size_t stage) {
  std::string label = "the merged kernel of ops ";
  for (size_t i = 0; i < ops.size(); ++i) label += (i ? ", " : "") + std::to_string(ops[i]);
  return label + " (stage " + std::to_string(stage) + ")";
}

// Fills a StagePlan stage by stage (step ranges, streams, merged kernels), then plans releases and
// events. Holds what only the construction needs.
class StagePlanBuilder {
 public:
  StagePlanBuilder(const OpGraph& graph, StagePlan& plan)
      : graph_(graph), plan_(plan), phase_of_step_(plan.compiled.num_steps()),
        group_of_step_(plan.compiled.num_steps()), stream_of_op_(graph.size()), position_of_op_(graph.size()),
        slot_producer_(plan.compiled.num_slots(), -1) {
    plan.merged_at_step.assign(plan.compiled.num_steps(), -1);
  }

  void AddStage(size_t s, const Stage& stage) {
    std::vector<StagePlan::GroupSteps> groups =
        stage.strategy == StageStrategy::Merge ? AddMergeStage(s, stage) : AddConcurrentStage(s, stage);
    for (const StagePlan::GroupSteps& group : groups) {
      plan_.num_streams = std::max(plan_.num_streams, group.stream + 1);
    }
    plan_.num_streams = std::max(plan_.num_streams, static_cast<int>(groups.size()));
    plan_.stages.push_back(std::move(groups));
  }

  void Finish() {
    plan_.release = plan_.compiled.PlanReleases(group_of_step_, phase_of_step_, static_cast<int>(plan_.stages.size()));
    PlanEvents();
  }

 private:
  // Steps [begin, end) belong to stage s, the current group, and write slots owned by `op`.
  void ClaimSteps(size_t begin, size_t end, size_t s, int op) {
    for (size_t k = begin; k < end; ++k) {
      phase_of_step_[k] = static_cast<int>(s);
      group_of_step_[k] = group_id_;
      for (int slot : plan_.compiled.step_outputs(k)) slot_producer_[slot] = op;
    }
  }

  // Records `sync` as the next operator position, run by `ops` on `stream`.
  void AddSync(StagePlan::OpSync sync, const std::vector<int>& ops) {
    for (int op : ops) {
      stream_of_op_[op] = sync.stream;
      position_of_op_[op] = static_cast<int>(plan_.ops_in_order.size());
    }
    ops_at_position_.push_back(ops);
    plan_.ops_in_order.push_back(std::move(sync));
  }

  // One group on stream 0; one synchronization unit for all its ops.
  std::vector<StagePlan::GroupSteps> AddMergeStage(size_t s, const Stage& stage) {
    std::vector<int> ops;
    size_t num_steps = 0, before_anchors = 0;
    for (const auto& group : stage.groups) {
      const OpNode& op = graph_.node(group[0]);
      ops.push_back(op.id);
      num_steps += op.num_steps();
      before_anchors += NodesBeforeAnchor(op);
    }
    StagePlan::OpSync sync;
    sync.begin = step_;
    sync.end = step_ + num_steps;
    ClaimSteps(sync.begin, sync.end, s, ops[0]);
    AddSync(sync, ops);
    AddMergedKernel(ops, s, step_ + before_anchors);
    step_ = sync.end;
    ++group_id_;
    return {StagePlan::GroupSteps{sync.begin, sync.end, 0}};
  }

  // The merged kernel that replaces the anchors of `ops`, side by side from step `begin`.
  void AddMergedKernel(const std::vector<int>& ops, size_t s, size_t begin) {
    const CompiledGraph& compiled = plan_.compiled;
    StagePlan::MergedSteps kernel;
    kernel.begin = begin;
    kernel.end = kernel.begin + ops.size();
    kernel.label = MergedLabel(ops, s);
    // The kernel is built over the ops in canonical order, so that merges of the same weights
    // listed in another order share it; slice_of maps its outputs back to the stage's order.
    const std::vector<int> canonical = CanonicalMergeOrder(graph_, ops);
    kernel.slice_of.resize(ops.size());
    for (size_t i = 0; i < ops.size(); ++i)
      kernel.slice_of[i] = std::find(canonical.begin(), canonical.end(), ops[i]) - canonical.begin();
    const std::string key = MergedKernelKey(graph_, canonical);
    auto same = kernel_of_key_.find(key);
    kernel.kernel = same != kernel_of_key_.end() ? plan_.merged[same->second].kernel : MergeOps(graph_, canonical);
    kernel_of_key_.emplace(key, plan_.merged.size());
    for (size_t k = kernel.begin; k < kernel.end; ++k) {
      const OpNode& op = graph_.node(ops[k - kernel.begin]);
      const bool found = op.aten_anchor >= 0 ? compiled.step_aten_node(k) == op.aten_anchor : compiled.step_node(k) == op.anchor;
      TORCH_CHECK(found && compiled.step_outputs(k).size() == 1, "StagePlan: ", kernel.label,
                  " does not find its operators where expected (internal error)");
      // An AtenGraph's slots are its value ids: the input is the anchor's argument 0, whatever else it reads.
      const int input = op.aten_anchor >= 0 ? compiled.aten_graph()->nodes[op.aten_anchor].args.at(0).value
                                            : compiled.step_inputs(k).at(0);
      TORCH_CHECK(kernel.input_slot < 0 || kernel.input_slot == input, "StagePlan: ", kernel.label,
                  " reads more than one input (internal error)");
      kernel.input_slot = input;
      kernel.output_slots.push_back(compiled.step_outputs(k)[0]);
      kernel.contiguous.push_back(op.aten_anchor >= 0 ? NeedsOwnMemory(*compiled.aten_graph(), compiled.step_outputs(k)[0])
                                                      : NeedsOwnMemory(op.anchor->output()));
    }
    // The merged weights were made on the current stream; runs use other streams (the caller's
    // at that time, or the backend's): wait once here rather than order every run after it.
    if (const c10::Device device = MergedKernelDevice(kernel.kernel); device.is_cuda()) {
      c10::impl::getDeviceGuardImpl(device.type())->getStream(device).synchronize();
    }
    plan_.merged_at_step[kernel.begin] = static_cast<int>(plan_.merged.size());
    plan_.merged.push_back(std::move(kernel));
  }

  // A group per stream; each operator its own synchronization unit.
  std::vector<StagePlan::GroupSteps> AddConcurrentStage(size_t s, const Stage& stage) {
    std::vector<StagePlan::GroupSteps> groups;
    for (size_t g = 0; g < stage.groups.size(); ++g) {
      StagePlan::GroupSteps range{step_, step_, stage.StreamOf(g)};
      for (int op : stage.groups[g]) {
        StagePlan::OpSync sync;
        sync.begin = step_;
        sync.stream = range.stream;
        sync.end = step_ + graph_.node(op).num_steps();
        ClaimSteps(sync.begin, sync.end, s, op);
        step_ = sync.end;
        AddSync(std::move(sync), {op});
      }
      range.end = step_;
      groups.push_back(range);
      ++group_id_;
    }
    return groups;
  }

  // Events: an operator waits only for the latest predecessor on each other stream that its stream
  // has not already waited for (a wait covers everything earlier on that stream). A Merge stage
  // waits for the predecessors of all its convolutions, and records one event after the kernel.
  void PlanEvents() {
    const int streams = plan_.num_streams;
    std::vector<std::vector<int>> waited(streams, std::vector<int>(streams, -1));  // [stream][other] position
    for (size_t pos = 0; pos < plan_.ops_in_order.size(); ++pos) {
      StagePlan::OpSync& sync = plan_.ops_in_order[pos];
      std::map<int, int> latest;  // other stream -> latest predecessor position
      for (int op : ops_at_position_[pos]) {
        for (int p : graph_.preds(op))
          if (stream_of_op_[p] != sync.stream)
            latest[stream_of_op_[p]] = std::max(latest[stream_of_op_[p]], position_of_op_[p]);
      }
      for (const auto& [other, p] : latest) {
        if (waited[sync.stream][other] >= p) continue;
        waited[sync.stream][other] = p;
        StagePlan::OpSync& producer = plan_.ops_in_order[p];
        if (producer.record_event < 0) producer.record_event = plan_.num_events++;
        sync.wait_events.push_back(producer.record_event);
      }
      AddForeignSlots(sync);
    }
  }

  // The slots `sync`'s steps read that another stream produced during the run. The graph's inputs
  // and constants stay in the table until after the join (the caller's stream then waits for every
  // stream), so their memory cannot be reused too early, and marking them on every run would only
  // add work to the allocator (weights would collect a stream use per side stream).
  void AddForeignSlots(StagePlan::OpSync& sync) const {
    for (size_t k = sync.begin; k < sync.end; ++k) {
      for (int slot : plan_.compiled.step_inputs(k)) {
        const int producer = slot_producer_[slot];
        const bool foreign = producer >= 0 && stream_of_op_[producer] != sync.stream;
        if (foreign && std::find(sync.foreign_slots.begin(), sync.foreign_slots.end(), slot) == sync.foreign_slots.end())
          sync.foreign_slots.push_back(slot);
      }
    }
  }

  const OpGraph& graph_;
  StagePlan& plan_;
  std::vector<int> phase_of_step_, group_of_step_;
  std::vector<int> stream_of_op_, position_of_op_;
  std::vector<std::vector<int>> ops_at_position_;  // the op(s) of each entry of ops_in_order
  std::vector<int> slot_producer_;                 // op that writes each slot
  std::map<std::string, size_t> kernel_of_key_;    // merges of the same weights share one merged kernel
  size_t step_ = 0;
  int group_id_ = 0;
};

// The same over an exported program's ATen graph: each operator's nodes, group by group.
std::vector<int> AtenScheduleOrder(const OpGraph& graph, const Schedule& schedule) {
  ValidateSchedule(schedule, graph);
  std::vector<int> order;
  for (const Stage& stage : schedule.stages) {
    if (stage.strategy == StageStrategy::Merge) {
      std::vector<int> before, anchors, after;
      for (const auto& group : stage.groups) {
        const OpNode& op = graph.node(group[0]);
        const size_t at = NodesBeforeAnchor(op);
        before.insert(before.end(), op.aten_nodes.begin(), op.aten_nodes.begin() + at);
        anchors.push_back(op.aten_anchor);
        after.insert(after.end(), op.aten_nodes.begin() + at + 1, op.aten_nodes.end());
      }
      for (const auto* part : {&before, &anchors, &after}) order.insert(order.end(), part->begin(), part->end());
      continue;
    }
    for (const auto& group : stage.groups)
      for (int op : group) order.insert(order.end(), graph.node(op).aten_nodes.begin(), graph.node(op).aten_nodes.end());
  }
  return order;
}

CompiledGraph CompileInScheduleOrder(const OpGraph& graph, const Schedule& schedule, bool full_float32) {
  if (graph.aten_graph()) return CompiledGraph(graph.aten_graph(), AtenScheduleOrder(graph, schedule));
  return CompiledGraph(graph.graph(), ScheduleOrder(graph, schedule), full_float32);
}

}  // namespace

StagePlan::StagePlan(const OpGraph& graph, const Schedule& schedule, bool full_float32)
    : compiled(CompileInScheduleOrder(graph, schedule, full_float32)) {
  StagePlanBuilder builder(graph, *this);
  for (size_t s = 0; s < schedule.stages.size(); ++s) builder.AddStage(s, schedule.stages[s]);
  builder.Finish();
}

size_t StagePlan::Run(size_t step, CompiledGraph::Table& table, torch::jit::Stack& stack) const {
  const int m = merged_at_step[step];
  if (m < 0) {
    compiled.RunStep(step, table, stack, &release);
    return step + 1;
  }
  const MergedSteps& kernel = merged[m];
  std::vector<at::Tensor> slices;
  try {
    slices = RunMergedKernel(table[kernel.input_slot].toTensor(), kernel.kernel);
  } catch (const std::exception& e) {
    throw InputError("running " + kernel.label + " failed: " + FirstLineOf(e) +
                     "; check that the inputs match what the model expects (shape, dtype, device)");
  }
  for (size_t i = 0; i < kernel.output_slots.size(); ++i) {
    at::Tensor& slice = slices[kernel.slice_of[i]];
    table[kernel.output_slots[i]] = kernel.contiguous[i] ? slice.contiguous() : std::move(slice);
  }
  return kernel.end;
}

StageExecutor::StageExecutor(const OpGraph& graph, const Schedule& schedule, const ExecutorOptions& options)
    : plan_(std::make_shared<const StagePlan>(graph, schedule, options.full_float32)) {
  if (options.device.is_cuda()) {
    backend_ = MakeCudaStageBackend(plan_, options);
  } else if (options.device.is_cpu()) {
    if (options.cuda_graph) throw Error("CUDA Graph capture needs a CUDA device; got " + options.device.str());
    backend_ = MakeCpuStageBackend(plan_);
  } else {
    throw Error("unsupported device '" + options.device.str() + "': autograph runs on cpu and cuda");
  }
}

}  // namespace autograph
