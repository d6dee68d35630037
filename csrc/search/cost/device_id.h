#pragma once
// Which device a measurement was taken on, as a string that keys the measured cost model's memo and
// disk cache: the same model on another GPU, another thread count or other TF32 settings is another
// measurement.
#include <c10/core/Device.h>

#include <string>

namespace autograph {

// "cuda:<device name>" (e.g. "cuda:NVIDIA H100 80GB HBM3") or "cpu:<n> threads" (ATen's intra-op
// threads). Throws Error for other device types, or for CUDA where none is available.
std::string DeviceId(c10::Device device);

// Where autograph keeps a per-device file: $XDG_CACHE_HOME (else ~/.cache)/autograph/<folder>/<device
// id, made file-name safe>.json; "" when neither variable is set.
std::string DeviceCachePath(const std::string& folder, const std::string& device_id);

// Settings that change kernel choice on the device and so belong in every key: TF32 for matmul and
// convolution, cuDNN autotuning (CUDA); empty on CPU.
std::string DeviceSettings(c10::Device device);

}  // namespace autograph
