#pragma once
// AnalyticalCostModel: predicts operator and stage latencies from a DeviceModel alone, without
// running anything. Cheap enough to rank every candidate of a search; measured costs verify the best.
//
// Operator: launch_us + roofline kernel time (kernel_roofline.h): max(compute, memory), each over the
// fraction of the device the kernel's thread blocks can occupy. Views cost 0; control flow costs one
// launch (its body is opaque here).
//
// Concurrent stage, with L = launch_us, G_i = sum over group i of (L + kernel time), k_i its kernel
// count, and s = sync_us per extra group:
//   max( max_i (L * sum_{j<i} k_j + G_i),      one host thread launches the groups in order
//        sum_i G_i / min(groups, max_concurrent_kernels),
//        L + sum_ops sm_share * kernel time,     SMs are space-shared by concurrent kernels
//        L + sum_ops bytes / achievable bandwidth )
//   + s * (groups - 1)
// where groups counts those with at least one kernel. A one-group stage is the sum of its operators.
//
// Merge stage: one kernel whose flops, bytes and thread blocks are the sums over its operators (the
// shared input read once when all read an input of the same shape), plus one launch.
#include <string>

#include "search/cost/cost_model.h"
#include "search/cost/device_model.h"

namespace autograph {

struct AnalyticalCostOptions {
  bool allow_tf32 = false;  // FP32 GEMMs/convs at the TF32 tensor-core rate (torch's allow_tf32)
};

// Stateless after construction: operator costs are recomputed on each call.
class AnalyticalCostModel : public CostModel {
 public:
  explicit AnalyticalCostModel(DeviceModel device, AnalyticalCostOptions options = {});

  std::string name() const override;  // "analytical:<device name>"
  double OperatorMs(const OpGraph& graph, int op) override;
  double StageMs(const OpGraph& graph, const Stage& stage) override;

  const DeviceModel& device() const { return device_; }

 private:
  struct OpCost {
    bool launches = false;    // false for views: no kernel, no launch
    double kernel_ms = 0;     // without the launch
    double sm_share = 0;
    double full_bandwidth_ms = 0;
  };
  OpCost CostOf(const OpGraph& graph, int op) const;
  OpCost ComputeCost(const OpNode& node) const;
  double ConcurrentStageMs(const OpGraph& graph, const Stage& stage);
  double MergedStageMs(const OpGraph& graph, const Stage& stage);

  DeviceModel device_;
  AnalyticalCostOptions options_;
};

}  // namespace autograph
