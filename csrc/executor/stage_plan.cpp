#include <algorithm>
#include <map>

#include "autograph/stage_executor.h"

namespace autograph {

namespace {

// The nodes of every operator, stage by stage, group by group. Validates first: the plan relies on it.
std::vector<torch::jit::Node*> ScheduleOrder(const OpGraph& graph, const Schedule& schedule) {
  ValidateSchedule(schedule, graph);
  std::vector<torch::jit::Node*> order;
  for (const Stage& stage : schedule.stages)
    for (const auto& group : stage.groups)
      for (int op : group) order.insert(order.end(), graph.node(op).jit_nodes.begin(), graph.node(op).jit_nodes.end());
  return order;
}

}  // namespace

StagePlan::StagePlan(const OpGraph& graph, const Schedule& schedule)
    : compiled(graph.graph(), ScheduleOrder(graph, schedule)) {
  std::vector<int> phase_of_step(compiled.num_steps()), group_of_step(compiled.num_steps());
  int group_id = 0;
  std::vector<int> stream_of_op(graph.size()), position_of_op(graph.size());
  std::vector<int> slot_producer(compiled.num_slots(), -1);  // op that writes each slot
  size_t step = 0;
  for (size_t s = 0; s < schedule.stages.size(); ++s) {
    std::vector<GroupSteps> groups;
    for (size_t g = 0; g < schedule.stages[s].groups.size(); ++g) {
      GroupSteps range{step, step, static_cast<int>(g)};
      for (int op : schedule.stages[s].groups[g]) {
        OpSync sync;
        sync.begin = step;
        sync.stream = static_cast<int>(g);
        for (size_t k = 0; k < graph.node(op).jit_nodes.size(); ++k, ++step) {
          phase_of_step[step] = static_cast<int>(s);
          group_of_step[step] = group_id;
          for (int slot : compiled.step_outputs(step)) slot_producer[slot] = op;
        }
        sync.end = step;
        stream_of_op[op] = sync.stream;
        position_of_op[op] = static_cast<int>(ops_in_order.size());
        ops_in_order.push_back(std::move(sync));
      }
      range.end = step;
      groups.push_back(range);
      ++group_id;
    }
    num_streams = std::max(num_streams, static_cast<int>(groups.size()));
    stages.push_back(std::move(groups));
  }
  release = compiled.PlanReleases(group_of_step, phase_of_step, static_cast<int>(stages.size()));

  // Events: an operator waits only for the latest predecessor on each other stream that its stream
  // has not already waited for (a wait covers everything earlier on that stream).
  std::vector<std::vector<int>> waited(num_streams, std::vector<int>(num_streams, -1));  // [stream][other] position
  std::vector<int> op_at(ops_in_order.size());
  for (int op = 0; op < graph.size(); ++op) op_at[position_of_op[op]] = op;
  for (size_t pos = 0; pos < ops_in_order.size(); ++pos) {
    OpSync& sync = ops_in_order[pos];
    const int op = op_at[pos];
    std::map<int, int> latest;  // other stream -> latest predecessor position
    for (int p : graph.preds(op))
      if (stream_of_op[p] != sync.stream) latest[stream_of_op[p]] = std::max(latest[stream_of_op[p]], position_of_op[p]);
    for (const auto& [other, p] : latest) {
      if (waited[sync.stream][other] >= p) continue;
      waited[sync.stream][other] = p;
      OpSync& producer = ops_in_order[p];
      if (producer.record_event < 0) producer.record_event = num_events++;
      sync.wait_events.push_back(producer.record_event);
    }
    for (size_t k = sync.begin; k < sync.end; ++k) {
      for (int slot : compiled.step_inputs(k)) {
        int producer = slot_producer[slot];
        bool foreign = producer >= 0 ? stream_of_op[producer] != sync.stream : sync.stream != 0;  // inputs live on stream 0
        if (foreign && std::find(sync.foreign_slots.begin(), sync.foreign_slots.end(), slot) == sync.foreign_slots.end())
          sync.foreign_slots.push_back(slot);
      }
    }
  }
}

StageExecutor::StageExecutor(const OpGraph& graph, const Schedule& schedule, const ExecutorOptions& options)
    : plan_(std::make_shared<const StagePlan>(graph, schedule)) {
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
