#include "search/cost/analytical_cost_model.h"

#include <algorithm>
#include <functional>

#include "search/cost/kernel_roofline.h"

namespace autograph {

AnalyticalCostModel::AnalyticalCostModel(DeviceModel device, AnalyticalCostOptions options)
    : device_(std::move(device)), options_(options) {
  ValidateDeviceModel(device_);  // a zero rate would turn every prediction into inf or NaN
}

std::string AnalyticalCostModel::name() const { return "analytical:" + device_.name; }

AnalyticalCostModel::OpCost AnalyticalCostModel::ComputeCost(const OpNode& node) const {
  OpCost cost;
  switch (node.kind) {
    case OpKind::View:
      return cost;
    case OpKind::ControlFlow:
      cost.launches = true;  // the interpreter runs the body; all we know is that something launches
      return cost;
    case OpKind::ComputeBound:
    case OpKind::MemoryBound:
      break;
  }
  const KernelTime t = EstimateKernel(WorkOf(node, device_), device_, options_.allow_tf32);
  cost.launches = true;
  cost.kernel_ms = t.ms + (node.op == "autograph::stitched" ? device_.stitch_overhead_us / 1e3 : 0.0);
  cost.sm_share = t.sm_share;
  cost.full_bandwidth_ms = t.full_bandwidth_ms;
  return cost;
}

// Recomputed on every call: a roofline of a few shapes costs about what checking a memo entry
// against the node would, and nothing can go stale.
AnalyticalCostModel::OpCost AnalyticalCostModel::CostOf(const OpGraph& graph, int op) const {
  return ComputeCost(graph.node(op));
}

double AnalyticalCostModel::OperatorMs(const OpGraph& graph, int op) {
  const OpCost cost = CostOf(graph, op);
  return cost.launches ? device_.launch_us / 1e3 + cost.kernel_ms : 0.0;
}

double AnalyticalCostModel::StageMs(const OpGraph& graph, const Stage& stage) {
  return stage.strategy == StageStrategy::Merge ? MergedStageMs(graph, stage) : ConcurrentStageMs(graph, stage);
}

double AnalyticalCostModel::ConcurrentStageMs(const OpGraph& graph, const Stage& stage) {
  const double launch_ms = device_.launch_us / 1e3;
  double launched_before_ms = 0;  // host time spent launching the groups before this one
  double stream_bound = 0, total_group_ms = 0, sm_ms = 0, bandwidth_ms = 0;
  int busy_groups = 0;
  for (const std::vector<int>& group : stage.groups) {
    double group_ms = 0;
    int kernels = 0;
    for (int op : group) {
      const OpCost cost = CostOf(graph, op);
      if (!cost.launches) continue;
      ++kernels;
      group_ms += launch_ms + cost.kernel_ms;
      sm_ms += cost.sm_share * cost.kernel_ms;
      bandwidth_ms += cost.full_bandwidth_ms;
    }
    if (kernels == 0) continue;
    ++busy_groups;
    stream_bound = std::max(stream_bound, launched_before_ms + group_ms);
    if (!device_.dispatch_per_group) launched_before_ms += kernels * launch_ms;  // one host thread launches all
    total_group_ms += group_ms;
  }
  if (busy_groups == 0) return 0;
  const int lanes = std::min(busy_groups, std::max(1, device_.max_concurrent_kernels));
  const double lanes_bound = total_group_ms / lanes;
  const double device_bound = launch_ms + std::max(sm_ms, bandwidth_ms);
  const double sync_ms = device_.sync_us / 1e3 * (busy_groups - 1);
  return std::max({stream_bound, lanes_bound, device_bound}) + sync_ms;
}

double AnalyticalCostModel::MergedStageMs(const OpGraph& graph, const Stage& stage) {
  // The merged kernel: work summed over the kernels of the stage; operators that cannot be part of
  // it (control flow) still launch on their own.
  KernelWork merged;
  bool any_kernel = false;
  int separate_launches = 0;
  double activation_bytes_sum = 0, activation_bytes_max = 0;
  const TensorMeta* first_input = nullptr;
  bool same_input_shape = true;
  for (const std::vector<int>& group : stage.groups) {
    for (int op : group) {
      const OpNode& node = graph.node(op);
      if (node.kind == OpKind::View) continue;
      if (node.kind == OpKind::ControlFlow) {
        ++separate_launches;
        continue;
      }
      const KernelWork work = WorkOf(node, device_);
      if (!any_kernel) {
        merged.blocks = 0;
        merged.dtype = work.dtype;
      }
      any_kernel = true;
      merged.flops += work.flops;
      merged.blocks += work.blocks;
      merged.gemm = merged.gemm || work.gemm;
      merged.bytes += static_cast<double>(node.bytes_written + node.weight_bytes);
      const double activation = static_cast<double>(node.bytes_read - node.weight_bytes);
      activation_bytes_sum += activation;
      activation_bytes_max = std::max(activation_bytes_max, activation);
      if (node.inputs.empty()) {
        same_input_shape = false;
      } else if (!first_input) {
        first_input = &node.inputs[0];
      } else if (first_input->shape != node.inputs[0].shape || first_input->dtype != node.inputs[0].dtype) {
        same_input_shape = false;
      }
    }
  }
  // A merge stage exists to read one input once (sibling convolutions, Q/K/V linears); without shapes
  // to show that, the inputs are charged in full.
  merged.bytes += same_input_shape ? activation_bytes_max : activation_bytes_sum;
  const double launch_ms = device_.launch_us / 1e3;
  double ms = separate_launches * launch_ms;
  if (any_kernel) ms += launch_ms + EstimateKernel(merged, device_, options_.allow_tf32).ms;
  return ms;
}

}  // namespace autograph
