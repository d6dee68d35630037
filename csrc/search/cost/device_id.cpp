// Device ids for the measured cost model; see device_id.h.
#include "search/cost/device_id.h"

#include <ATen/Context.h>
#include <ATen/Parallel.h>

#include <cctype>
#include <cstdlib>
#include <filesystem>

#include "autograph/error.h"

#ifdef AUTOGRAPH_WITH_CUDA
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAFunctions.h>
#endif

namespace autograph {

std::string DeviceId(c10::Device device) {
  if (device.is_cpu()) return "cpu:" + std::to_string(at::get_num_threads()) + " threads";
  if (device.is_cuda()) {
#ifdef AUTOGRAPH_WITH_CUDA
    if (!at::hasCUDA()) throw Error("device " + device.str() + " asked for, but no CUDA device is available here");
    const c10::DeviceIndex index = device.has_index() ? device.index() : c10::cuda::current_device();
    return std::string("cuda:") + at::cuda::getDeviceProperties(index)->name;
#else
    throw Error("device " + device.str() + " asked for, but autograph was built without CUDA");
#endif
  }
  throw Error("unsupported device '" + device.str() + "': autograph measures on cpu and cuda");
}

std::string DeviceCachePath(const std::string& folder, const std::string& device_id) {
  std::filesystem::path base;
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg) {
    base = xdg;
  } else if (const char* home = std::getenv("HOME"); home && *home) {
    base = std::filesystem::path(home) / ".cache";
  } else {
    return "";
  }
  std::string file;
  for (char c : device_id) file += std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-' ? c : '_';
  return (base / "autograph" / folder / (file + ".json")).string();
}

std::string DeviceSettings(c10::Device device) {
  if (!device.is_cuda()) return "";
  at::Context& ctx = at::globalContext();
  return std::string("tf32-matmul=") + (ctx.allowTF32CuBLAS() ? "1" : "0") +
         " tf32-conv=" + (ctx.allowTF32CuDNN(at::Float32Op::CONV) ? "1" : "0") +
         " cudnn-benchmark=" + (ctx.benchmarkCuDNN() ? "1" : "0");
}

}  // namespace autograph
