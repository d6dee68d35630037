#include "search/cost/kernel_roofline.h"

#include <algorithm>
#include <cmath>

#include "core/operator_flops.h"

namespace autograph {

namespace {

// Graphs built without tensor metadata still carry bytes: count them as FP32 elements.
constexpr double kFallbackElementBytes = 4;

// GEMM view of a convolution's or matmul's output: rows x columns, columns being the output channels
// (dim 1 of NC...) or features (last dim). Each block computes one tile x tile patch of it.
double GemmTiles(const OpNode& node, int tile) {
  if (node.outputs.empty() || node.outputs[0].shape.empty()) {
    const double elements = static_cast<double>(node.bytes_written) / kFallbackElementBytes;
    return std::ceil(elements / (static_cast<double>(tile) * tile));
  }
  const TensorMeta& out = node.outputs[0];
  const size_t column_dim = IsConvolutionOp(node.op) && out.shape.size() >= 3 ? 1 : out.shape.size() - 1;
  const double columns = static_cast<double>(std::max<int64_t>(1, out.shape[column_dim]));
  const double rows = static_cast<double>(out.numel()) / columns;
  return std::ceil(rows / tile) * std::ceil(columns / tile);
}

// Elements a memory-bound kernel walks over: its output, or its largest input for reductions.
double MemoryBoundElements(const OpNode& node) {
  double written = 0, largest_read = 0;
  for (const TensorMeta& m : node.outputs) written += static_cast<double>(m.numel());
  for (const TensorMeta& m : node.inputs) largest_read = std::max(largest_read, static_cast<double>(m.numel()));
  if (written == 0 && largest_read == 0)
    return static_cast<double>(std::max(node.bytes_read, node.bytes_written)) / kFallbackElementBytes;
  return std::max(written, largest_read);
}

c10::ScalarType DtypeOf(const OpNode& node) {
  for (const auto* metas : {&node.outputs, &node.inputs})
    for (const TensorMeta& m : *metas)
      if (m.dtype != c10::ScalarType::Undefined) return m.dtype;
  return c10::ScalarType::Float;
}

// Peak arithmetic rate (FLOP/s) of the unit the kernel runs on.
double PeakFlops(const KernelWork& work, const DeviceModel& device, bool allow_tf32) {
  double tflops = device.fp32_tflops;
  if (work.gemm) {
    if (work.dtype == c10::ScalarType::Half || work.dtype == c10::ScalarType::BFloat16) {
      tflops = device.fp16_tflops;
    } else if (work.dtype == c10::ScalarType::Float && allow_tf32) {
      tflops = device.tf32_tflops;
    }
  }
  // FP64 runs at half the FP32 rate on the data-center GPUs of the presets (H100, A100, V100).
  if (work.dtype == c10::ScalarType::Double) tflops = device.fp32_tflops / 2;
  const double efficiency = work.gemm ? device.gemm_efficiency : device.vector_efficiency;
  return tflops * 1e12 * efficiency;
}

}  // namespace

KernelWork WorkOf(const OpNode& node, const DeviceModel& device) {
  KernelWork work;
  work.flops = node.flops;
  work.bytes = static_cast<double>(node.bytes_read + node.bytes_written);
  work.gemm = node.kind == OpKind::ComputeBound;
  work.dtype = DtypeOf(node);
  const double blocks = work.gemm ? GemmTiles(node, device.gemm_tile)
                                  : std::ceil(MemoryBoundElements(node) / device.elementwise_block_elements);
  work.blocks = std::max(1.0, blocks);
  return work;
}

KernelTime EstimateKernel(const KernelWork& work, const DeviceModel& device, bool allow_tf32) {
  const double sms = device.sms;
  const double occupancy = std::min(1.0, work.blocks / sms);
  const double bandwidth_occupancy = std::min(1.0, work.blocks * device.sm_bandwidth_share / sms);
  const double compute_s = work.flops / PeakFlops(work, device, allow_tf32);
  const double memory_s = work.bytes / (device.memory_gbps * 1e9 * device.memory_efficiency);
  KernelTime t;
  t.ms = 1e3 * std::max(compute_s / occupancy, memory_s / bandwidth_occupancy);
  t.sm_share = occupancy;
  t.full_bandwidth_ms = 1e3 * memory_s;
  return t;
}

}  // namespace autograph
