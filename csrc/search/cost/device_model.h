#pragma once
// DeviceModel: the figures an analytical cost model needs about one device (peak arithmetic rates,
// memory bandwidth, per-kernel overheads), plus the efficiency factors that turn peaks into what real
// kernels reach. Presets carry published figures; the factors are stored with them in JSON so that a
// calibration run can replace them with measured ones.
#include <nlohmann/json_fwd.hpp>

#include <string>
#include <vector>

#include "autograph/error.h"

namespace autograph {

struct DeviceModel {
  std::string name;
  int sms = 1;                     // streaming multiprocessors (GPU) or cores (CPU)
  double fp32_tflops = 0;          // dense FP32 (FMA counted as 2 FLOPs)
  double tf32_tflops = 0;          // dense TF32 tensor-core rate; fp32_tflops where there is none
  double fp16_tflops = 0;          // dense FP16 tensor-core rate (also used for BF16)
  double memory_gbps = 0;          // peak DRAM bandwidth, 1e9 bytes/s
  double launch_us = 0;            // host dispatch + kernel launch per operator
  double sync_us = 0;              // fork/join of one extra stream (event record + wait)
  // Host work of a stitched kernel beyond a launch (program lookup, layout of its inputs, output
  // allocation; on CUDA a cached NVRTC kernel): what makes a small group cost more than its bytes.
  double stitch_overhead_us = 0;
  int max_concurrent_kernels = 1;  // kernels the device runs side by side
  // Whether each concurrent group dispatches its own operators (a CPU, where each group runs on a
  // worker thread) rather than one host thread launching for every stream (a GPU), whose launches
  // then delay the groups behind them.
  bool dispatch_per_group = false;

  // Fractions of the peaks that real kernels reach once they fill the device.
  double gemm_efficiency = 0.7;     // convolutions and GEMMs (cuDNN/cuBLAS class kernels)
  double vector_efficiency = 0.5;   // arithmetic of memory-bound ops: no FMA pairing, no tensor cores
  double memory_efficiency = 0.8;   // streaming kernels vs peak DRAM bandwidth
  // DRAM bandwidth one busy SM can draw, in units of its fair share (memory_gbps / sms): few blocks
  // already move data faster than their share of the arithmetic.
  double sm_bandwidth_share = 4;

  // Work granularity, used to estimate how many SMs a kernel can occupy.
  int gemm_tile = 64;                     // a GEMM/conv thread block computes gemm_tile x gemm_tile outputs
  int elementwise_block_elements = 1024;  // a memory-bound thread block handles this many elements

  // Published presets: "h100" (SXM5 80GB), "a100" (SXM4 80GB), "v100" (SXM2), and "cpu" (this host:
  // cores from std::thread::hardware_concurrency, nominal per-core rates; see device_model.cpp);
  // names are case-insensitive. A name ending in ".json" is the path of a saved model (e.g. one
  // fitted by `autograph calibrate`), loaded with LoadDeviceModel. Throws autograph::Error listing
  // the known names for any other name, and saying how to make the file when it does not exist.
  static DeviceModel ByName(const std::string& name);
  static std::vector<std::string> KnownNames();
};

// Throws autograph::Error naming the first field that no cost model can work with: sms, rates or
// granularity not positive, overheads negative, efficiencies outside (0, 1].
void ValidateDeviceModel(const DeviceModel& device);

// {"version":1,"name":"h100","sms":132,...,"efficiency":{"gemm":0.7,...},"granularity":{...}}
nlohmann::json DeviceModelToJson(const DeviceModel& device);
// Inverse of DeviceModelToJson. Throws autograph::Error naming the key at fault on anything malformed:
// missing or unknown keys, wrong types, non-positive rates, efficiencies outside (0, 1].
DeviceModel DeviceModelFromJson(const nlohmann::json& json);

// Where `autograph calibrate` keeps the fitted model of a device when no -o is given, and where
// optimize looks for one first: $XDG_CACHE_HOME or ~/.cache, then autograph/device_models/<device id>.json
// (device id as DeviceId gives it, e.g. "cpu:2 threads"). "" when neither variable is set.
std::string CalibratedDeviceModelPath(const std::string& device_id);

// File forms of the above. Throw autograph::Error naming the path when it cannot be read or written.
void SaveDeviceModel(const DeviceModel& device, const std::string& path);
DeviceModel LoadDeviceModel(const std::string& path);

}  // namespace autograph
