// NVRTC, loaded when a stitched CUDA kernel is first compiled rather than linked: the runtime library
// (libautograph_runtime.so) then needs no NVRTC at load time, and a server that runs no stitched CUDA
// kernel never needs it at all.
#pragma once

#ifdef AUTOGRAPH_WITH_CUDA

#include <nvrtc.h>

namespace autograph {

// The entry points autograph calls, resolved from libnvrtc.so.<CUDA major> (the one torch's own
// libcaffe2_nvrtc.so loads, when it is not found by name).
struct NvrtcLibrary {
  decltype(&::nvrtcGetErrorString) GetErrorString = nullptr;
  decltype(&::nvrtcGetNumSupportedArchs) GetNumSupportedArchs = nullptr;
  decltype(&::nvrtcGetSupportedArchs) GetSupportedArchs = nullptr;
  decltype(&::nvrtcCreateProgram) CreateProgram = nullptr;
  decltype(&::nvrtcDestroyProgram) DestroyProgram = nullptr;
  decltype(&::nvrtcCompileProgram) CompileProgram = nullptr;
  decltype(&::nvrtcGetProgramLogSize) GetProgramLogSize = nullptr;
  decltype(&::nvrtcGetProgramLog) GetProgramLog = nullptr;
  decltype(&::nvrtcGetPTXSize) GetPTXSize = nullptr;
  decltype(&::nvrtcGetPTX) GetPTX = nullptr;
  decltype(&::nvrtcGetCUBINSize) GetCUBINSize = nullptr;
  decltype(&::nvrtcGetCUBIN) GetCUBIN = nullptr;
};

// Loaded once per process. Throws Error naming the library and what to do when it cannot be found.
const NvrtcLibrary& Nvrtc();

}  // namespace autograph

#endif  // AUTOGRAPH_WITH_CUDA
