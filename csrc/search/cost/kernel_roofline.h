#pragma once
// Roofline time of one kernel on a DeviceModel, with an occupancy term: a kernel with fewer thread
// blocks than the device has SMs leaves the rest idle, so small kernels at batch 1 reach only a
// fraction of the peaks. Used by AnalyticalCostModel for single operators and merged stages.
#include <c10/core/ScalarType.h>

#include "core/op_graph.h"
#include "search/cost/device_model.h"

namespace autograph {

// The work of one kernel, as far as the roofline is concerned.
struct KernelWork {
  double flops = 0;
  double bytes = 0;      // read + written
  double blocks = 1;     // thread blocks it can spread over
  bool gemm = false;     // runs on the GEMM/conv path (tensor cores where the dtype allows)
  c10::ScalarType dtype = c10::ScalarType::Float;
};

struct KernelTime {
  double ms = 0;               // running alone on the device, launch not included
  double sm_share = 0;         // fraction of the SMs it holds while it runs
  double full_bandwidth_ms = 0;  // its bytes at the device's achievable bandwidth (a floor shared by all)
};

// The kernel work of a ComputeBound or MemoryBound operator: its flops and bytes, and blocks
// estimated from its output (one gemm_tile^2 tile per block for GEMM/conv, laid out over the GEMM
// view of the output; one elementwise_block_elements chunk per block otherwise).
KernelWork WorkOf(const OpNode& node, const DeviceModel& device);

// time = max(flops / (peak * efficiency * occupancy), bytes / (bandwidth * memory_efficiency *
// bandwidth_occupancy)), occupancy = min(1, blocks / sms), bandwidth_occupancy =
// min(1, blocks * sm_bandwidth_share / sms). FP32 GEMMs use the TF32 rate only when allow_tf32.
KernelTime EstimateKernel(const KernelWork& work, const DeviceModel& device, bool allow_tf32);

}  // namespace autograph
