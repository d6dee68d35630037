// NVRTC loaded on first use; see nvrtc_library.h.
#include "ops/nvrtc_library.h"

#ifdef AUTOGRAPH_WITH_CUDA

#include <cuda_runtime_api.h>  // CUDART_VERSION: the NVRTC of the toolkit we were built with
#include <dlfcn.h>

#include <string>
#include <type_traits>

#include "autograph/error.h"

namespace autograph {
namespace {

NvrtcLibrary Load() {
  const std::string name = "libnvrtc.so." + std::to_string(CUDART_VERSION / 1000);
  void* handle = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    // pip's torch keeps NVRTC in nvidia/cu<major>/lib, where libcaffe2_nvrtc.so (torch/lib, on our
    // run path) finds it through its own: loading that loads NVRTC, which is then found by name.
    if (dlopen("libcaffe2_nvrtc.so", RTLD_NOW | RTLD_LOCAL)) handle = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
  }
  if (!handle) {
    const char* why = dlerror();
    throw Error("stitched (CUDA): NVRTC (" + name + ") cannot be loaded" + (why ? std::string(": ") + why : "") +
                ". It compiles the stitched CUDA kernels: install the CUDA " + std::to_string(CUDART_VERSION / 1000) +
                " runtime compiler (pip's nvidia-cuda-nvrtc, which torch's CUDA wheels depend on) or put its "
                "folder on LD_LIBRARY_PATH, or optimize with --no-stitch");
  }
  NvrtcLibrary api;
  auto resolve = [&](auto& entry, const char* symbol) {
    entry = reinterpret_cast<std::remove_reference_t<decltype(entry)>>(dlsym(handle, symbol));
    if (!entry) throw Error("stitched (CUDA): " + name + " has no " + symbol + " (an NVRTC older than CUDA 12?)");
  };
  resolve(api.GetErrorString, "nvrtcGetErrorString");
  resolve(api.GetNumSupportedArchs, "nvrtcGetNumSupportedArchs");
  resolve(api.GetSupportedArchs, "nvrtcGetSupportedArchs");
  resolve(api.CreateProgram, "nvrtcCreateProgram");
  resolve(api.DestroyProgram, "nvrtcDestroyProgram");
  resolve(api.CompileProgram, "nvrtcCompileProgram");
  resolve(api.GetProgramLogSize, "nvrtcGetProgramLogSize");
  resolve(api.GetProgramLog, "nvrtcGetProgramLog");
  resolve(api.GetPTXSize, "nvrtcGetPTXSize");
  resolve(api.GetPTX, "nvrtcGetPTX");
  resolve(api.GetCUBINSize, "nvrtcGetCUBINSize");
  resolve(api.GetCUBIN, "nvrtcGetCUBIN");
  return api;  // the handle stays open for the process
}

}  // namespace

const NvrtcLibrary& Nvrtc() {
  static const NvrtcLibrary api = Load();  // a failed load throws, and the next call tries again
  return api;
}

}  // namespace autograph

#endif  // AUTOGRAPH_WITH_CUDA
