#include "search/cost/device_model.h"

#include "search/cost/device_id.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <thread>

namespace autograph {

namespace {

// Figures that are ours, not a vendor's, shared by the GPU presets until calibration replaces them:
// ATen dispatch + cudaLaunchKernel on a current server CPU is a few microseconds per operator, and a
// fork/join of one stream (cudaEventRecord + cudaStreamWaitEvent, both ways) about two.
constexpr double kGpuLaunchUs = 5.0;
constexpr double kGpuSyncUs = 2.0;
// CUDA C++ Programming Guide, "Features and Technical Specifications", table of compute capabilities:
// maximum number of resident grids per device (concurrent kernel execution) is 128 for 7.0, 8.0, 9.0.
constexpr int kGpuResidentGrids = 128;

// A GPU from its datasheet figures; launch, sync and concurrency as above, common to all three.
DeviceModel Gpu(const char* name, int sms, double fp32_tflops, double tf32_tflops, double fp16_tflops,
                double memory_gbps) {
  DeviceModel d;
  d.name = name;
  d.sms = sms;
  d.fp32_tflops = fp32_tflops;
  d.tf32_tflops = tf32_tflops;
  d.fp16_tflops = fp16_tflops;
  d.memory_gbps = memory_gbps;
  d.launch_us = kGpuLaunchUs;
  d.sync_us = kGpuSyncUs;
  d.max_concurrent_kernels = kGpuResidentGrids;
  return d;
}

DeviceModel H100() {
  // NVIDIA H100 Tensor Core GPU Architecture whitepaper (2022), H100 SXM5 column, and the H100
  // datasheet: 132 SMs; FP32 67 TFLOP/s; TF32 tensor 989 TFLOP/s and FP16 tensor 1979 TFLOP/s with
  // 2:4 sparsity, so half of each dense; HBM3 3.35 TB/s (80 GB).
  return Gpu("h100", 132, 67.0, 494.7, 989.4, 3350);
}

DeviceModel A100() {
  // NVIDIA A100 Tensor Core GPU Architecture whitepaper (2020): 108 SMs. NVIDIA A100 80GB datasheet,
  // SXM column: FP32 19.5 TFLOP/s; TF32 tensor 156 and FP16 tensor 312 TFLOP/s dense (312 / 624 with
  // sparsity); HBM2e 2039 GB/s.
  return Gpu("a100", 108, 19.5, 156, 312, 2039);
}

DeviceModel V100() {
  // NVIDIA Tesla V100 GPU Architecture whitepaper (2017): 80 SMs. NVIDIA V100 datasheet, SXM2
  // column: FP32 15.7 TFLOP/s; tensor (FP16) 125 TFLOP/s; HBM2 900 GB/s. Volta has no TF32, so TF32
  // math runs at the FP32 rate.
  return Gpu("v100", 80, 15.7, 15.7, 125, 900);
}

DeviceModel Cpu() {
  // The local CPU, each core standing in for an SM. Assumptions (nominal, to be calibrated):
  // - 80 GFLOP/s FP32 per core: 2.5 GHz x two 256-bit FMA pipes x 8 lanes x 2 FLOPs (the AVX2 core of
  //   Intel's Optimization Reference Manual since Haswell, and AMD Zen 2 and later);
  // - no tensor units: TF32 and FP16 run at the FP32 rate;
  // - 10 GB/s of DRAM bandwidth per core (a server socket's bandwidth shared by its cores);
  // - 2 us to dispatch an ATen op (no device launch), 10 us to hand a group to a pool thread and join;
  // - ATen splits elementwise loops into chunks of at::internal::GRAIN_SIZE = 32768 elements.
  const int cores = std::max(1u, std::thread::hardware_concurrency());
  DeviceModel d;
  d.name = "cpu";
  d.sms = cores;
  d.fp32_tflops = 0.080 * cores;
  d.tf32_tflops = d.fp32_tflops;
  d.fp16_tflops = d.fp32_tflops;
  d.memory_gbps = 10.0 * cores;
  d.launch_us = 2.0;
  d.sync_us = 10.0;
  d.stitch_overhead_us = 5.0;  // program cache lookup, input layout, output allocation per call
  d.max_concurrent_kernels = cores;
  d.dispatch_per_group = true;
  d.gemm_efficiency = 0.6;
  d.memory_efficiency = 0.7;
  d.sm_bandwidth_share = 2;
  d.elementwise_block_elements = 32768;
  return d;
}

struct Preset {
  const char* name;
  DeviceModel (*make)();
};
const Preset kPresets[] = {{"h100", H100}, {"a100", A100}, {"v100", V100}, {"cpu", Cpu}};

std::string JoinedNames() {
  std::string known;
  for (const Preset& preset : kPresets) known += std::string(known.empty() ? "" : ", ") + preset.name;
  return known;
}

}  // namespace

std::vector<std::string> DeviceModel::KnownNames() {
  std::vector<std::string> names;
  for (const Preset& preset : kPresets) names.emplace_back(preset.name);
  return names;
}

std::string CalibratedDeviceModelPath(const std::string& device_id) {
  return DeviceCachePath("device_models", device_id);
}

DeviceModel DeviceModel::ByName(const std::string& name) {
  std::string lower = name;
  std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
  const std::string json_suffix = ".json";
  if (lower.size() > json_suffix.size() &&
      lower.compare(lower.size() - json_suffix.size(), json_suffix.size(), json_suffix) == 0) {
    std::error_code ec;
    if (!std::filesystem::is_regular_file(name, ec)) {
      throw Error("device model file '" + name + "' does not exist; write one with `autograph calibrate MODEL.pt " +
                  "-o " + name + "`, or name a preset: " + JoinedNames());
    }
    return LoadDeviceModel(name);
  }
  for (const Preset& preset : kPresets)
    if (lower == preset.name) return preset.make();
  throw Error("unknown device model \"" + name + "\"; known devices: " + JoinedNames() +
              ", or the path of a calibrated one (FILE.json, written by `autograph calibrate`)");
}

void ValidateDeviceModel(const DeviceModel& d) {
  auto fail = [&](const char* field, double value, const char* expected) {
    throw Error("device model \"" + d.name + "\": " + field + " is " + std::to_string(value) + "; expected " +
                expected);
  };
  auto positive = [&](const char* field, double value) {
    if (!(value > 0) || !std::isfinite(value)) fail(field, value, "a positive number");
  };
  auto fraction = [&](const char* field, double value) {
    if (!(value > 0 && value <= 1)) fail(field, value, "an efficiency in (0, 1]");
  };
  positive("sms", d.sms);
  positive("fp32_tflops", d.fp32_tflops);
  positive("tf32_tflops", d.tf32_tflops);
  positive("fp16_tflops", d.fp16_tflops);
  positive("memory_gbps", d.memory_gbps);
  if (!(d.launch_us >= 0) || !std::isfinite(d.launch_us)) fail("launch_us", d.launch_us, "a non-negative number");
  if (!(d.sync_us >= 0) || !std::isfinite(d.sync_us)) fail("sync_us", d.sync_us, "a non-negative number");
  if (!(d.stitch_overhead_us >= 0) || !std::isfinite(d.stitch_overhead_us))
    fail("stitch_overhead_us", d.stitch_overhead_us, "a non-negative number");
  positive("max_concurrent_kernels", d.max_concurrent_kernels);
  fraction("gemm_efficiency", d.gemm_efficiency);
  fraction("vector_efficiency", d.vector_efficiency);
  fraction("memory_efficiency", d.memory_efficiency);
  positive("sm_bandwidth_share", d.sm_bandwidth_share);
  positive("gemm_tile", d.gemm_tile);
  positive("elementwise_block_elements", d.elementwise_block_elements);
}

}  // namespace autograph
