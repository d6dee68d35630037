// CUDA implementation of autograph::stitched: the kernel generated for (program, layout, dtype) is
// compiled with NVRTC for the device's architecture on first use and cached for the process.
//
// NVRTC is loaded on first use (ops/nvrtc_library.h; the torch wheel does not ship ATen's NVRTC
// stub header), the runtime's library-management API (cudaLibraryLoadData / cudaLibraryGetKernel,
// CUDA 12+) called directly: libcudart is among the libraries torch's CMake config links for a CUDA
// build, and the runtime API spares us linking the driver library (libcuda) explicitly.
#ifdef AUTOGRAPH_WITH_CUDA

#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAFunctions.h>
#include <c10/cuda/CUDAGuard.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <memory>
#include <mutex>
#include <unordered_map>

#include "autograph/error.h"
#include "ops/nvrtc_library.h"
#include "ops/stitched_kernels.h"
#include "stitch/stitch_cuda_source.h"

namespace autograph {

namespace {

std::string DtypeName(c10::ScalarType dtype) {
  switch (dtype) {
    case c10::ScalarType::Float: return "float";
    case c10::ScalarType::Double: return "double";
    case c10::ScalarType::Half: return "__half";
    case c10::ScalarType::BFloat16: return "__nv_bfloat16";
    default:
      throw InputError(std::string("stitched (CUDA): dtype ") + c10::toString(dtype) +
                       " is not supported (float, double, half, bfloat16)");
  }
}

struct CompiledStitchKernel {
  cudaLibrary_t library = nullptr;  // owns the code; kept for the process (see KernelCache)
  cudaKernel_t kernel = nullptr;
  std::string name;
  StitchCudaLaunch launch;
  bool empty = false;
};

// Releases an nvrtcProgram on every path out of CompileImage.
struct NvrtcProgramHolder {
  const NvrtcLibrary& nvrtc;
  nvrtcProgram program = nullptr;
  ~NvrtcProgramHolder() {
    if (program) nvrtc.DestroyProgram(&program);
  }
};

std::string Describe(const std::string& text, const StitchCudaSpec& spec) {
  return "program '" + text + "', " + spec.Key();
}

// Compiles to a cubin for the device's own architecture when NVRTC knows it; for a newer device, to
// PTX for the newest architecture NVRTC knows, which the driver compiles on load.
std::string CompileImage(const StitchCudaKernel& kernel, const std::string& what, int major, int minor) {
  const NvrtcLibrary& nvrtc = Nvrtc();
  const int device_arch = major * 10 + minor;
  int count = 0;
  nvrtc.GetNumSupportedArchs(&count);
  std::vector<int> archs(std::max(count, 0));
  if (count > 0) nvrtc.GetSupportedArchs(archs.data());
  int best = 0;
  for (int a : archs)
    if (a <= device_arch) best = std::max(best, a);
  if (best == 0) {
    throw Error("stitched (CUDA): NVRTC cannot generate code for compute capability " + std::to_string(major) + "." +
                std::to_string(minor) + " (" + what + ")");
  }
  const bool cubin = best == device_arch;
  const std::string arch = (cubin ? "sm_" : "compute_") + std::to_string(best);

  NvrtcProgramHolder holder{nvrtc};
  nvrtcResult status =
      nvrtc.CreateProgram(&holder.program, kernel.source.c_str(), "autograph_stitched.cu", 0, nullptr, nullptr);
  if (status != NVRTC_SUCCESS) {
    throw Error(std::string("stitched (CUDA): nvrtcCreateProgram failed: ") + nvrtc.GetErrorString(status) + " (" +
                what + ")");
  }
  const std::vector<std::string> options = StitchNvrtcOptions(arch);
  std::vector<const char*> option_pointers;
  for (const std::string& o : options) option_pointers.push_back(o.c_str());
  status = nvrtc.CompileProgram(holder.program, static_cast<int>(option_pointers.size()), option_pointers.data());
  if (status != NVRTC_SUCCESS) {
    size_t log_size = 0;
    nvrtc.GetProgramLogSize(holder.program, &log_size);
    std::string log(log_size, '\0');
    if (log_size > 0) nvrtc.GetProgramLog(holder.program, &log[0]);
    throw Error(std::string("stitched (CUDA): NVRTC could not compile the generated kernel (") +
                nvrtc.GetErrorString(status) + ") for " + what + " with " + arch + ":\n" + log +
                "\n--- generated source ---\n" + kernel.source);
  }
  size_t size = 0;
  std::string image;
  if (cubin) {
    status = nvrtc.GetCUBINSize(holder.program, &size);
    if (status == NVRTC_SUCCESS) {
      image.resize(size);
      status = nvrtc.GetCUBIN(holder.program, &image[0]);
    }
  } else {
    status = nvrtc.GetPTXSize(holder.program, &size);  // includes the terminating NUL the loader expects
    if (status == NVRTC_SUCCESS) {
      image.resize(size);
      status = nvrtc.GetPTX(holder.program, &image[0]);
    }
  }
  if (status != NVRTC_SUCCESS) {
    throw Error(std::string("stitched (CUDA): reading NVRTC's output failed: ") + nvrtc.GetErrorString(status) + " (" +
                what + ")");
  }
  return image;
}

void CheckCuda(cudaError_t status, const std::string& step, const std::string& what) {
  if (status == cudaSuccess) return;
  cudaGetLastError();  // clear the (non-sticky) error so that later, unrelated calls do not report it
  throw Error("stitched (CUDA): " + step + " failed: " + cudaGetErrorString(status) + " (" + what + ")");
}

std::shared_ptr<const CompiledStitchKernel> Compile(const StitchProgram& program, const std::string& text,
                                                    const StitchCudaSpec& spec, int device) {
  const std::string what = Describe(text, spec);
  StitchCudaKernel generated = GenerateStitchCudaKernel(program, spec);
  auto compiled = std::make_shared<CompiledStitchKernel>();
  compiled->name = generated.name;
  compiled->launch = generated.launch;
  compiled->empty = generated.empty;
  if (generated.empty) return compiled;

  const cudaDeviceProp* properties = at::cuda::getDeviceProperties(static_cast<c10::DeviceIndex>(device));
  const std::string image = CompileImage(generated, what, properties->major, properties->minor);
  CheckCuda(cudaLibraryLoadData(&compiled->library, image.data(), nullptr, nullptr, 0, nullptr, nullptr, 0),
            "loading the compiled kernel (cudaLibraryLoadData)", what);
  cudaError_t status = cudaLibraryGetKernel(&compiled->kernel, compiled->library, generated.name.c_str());
  if (status != cudaSuccess) {
    cudaLibraryUnload(compiled->library);
    CheckCuda(status, "cudaLibraryGetKernel(" + generated.name + ")", what);
  }
  if (generated.launch.shared_bytes > 48 * 1024) {  // above the default dynamic shared memory limit: opt in
    status = cudaKernelSetAttributeForDevice(compiled->kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                             static_cast<int>(generated.launch.shared_bytes), device);
    if (status != cudaSuccess) {
      cudaLibraryUnload(compiled->library);
      CheckCuda(status, "raising the kernel's shared memory limit", what);
    }
  }
  return compiled;
}

// Compiled kernels by (program text, specialization, device). Never unloaded: a program's kernels
// are reused for as long as the process runs, and unloading during exit races the CUDA runtime's
// own teardown. Compilation happens outside the lock so that threads compiling different kernels
// do not wait for each other; if two threads compile the same one, the first to insert wins.
class KernelCache {
 public:
  static KernelCache& Get() {
    static KernelCache* cache = new KernelCache();  // leaked on purpose, see above
    return *cache;
  }

  std::shared_ptr<const CompiledStitchKernel> Find(const std::string& key) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = kernels_.find(key);
    return it == kernels_.end() ? nullptr : it->second;
  }

  std::shared_ptr<const CompiledStitchKernel> Insert(const std::string& key,
                                                     std::shared_ptr<const CompiledStitchKernel> kernel) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto inserted = kernels_.emplace(key, kernel);
    if (!inserted.second && kernel->library) cudaLibraryUnload(kernel->library);  // lost the race
    return inserted.first->second;
  }

 private:
  std::mutex mutex_;
  std::unordered_map<std::string, std::shared_ptr<const CompiledStitchKernel>> kernels_;
};

}  // namespace

void RunStitchedCuda(const StitchProgram& program, const std::string& text, const StitchLayout& layout,
                     const std::vector<at::Tensor>& inputs, std::vector<at::Tensor>& outputs) {
  if (!layout.device.is_cuda()) throw InputError("stitched (CUDA): the inputs are on " + layout.device.str());
  if (outputs.size() != program.outputs.size()) {
    throw Error("stitched (CUDA): " + std::to_string(outputs.size()) + " output tensors for " +
                std::to_string(program.outputs.size()) + " program outputs");
  }
  for (size_t o = 0; o < outputs.size(); ++o) {
    // The kernel writes outputs densely in the domain's row-major order.
    const at::Tensor& out = outputs[o];
    if (!out.is_contiguous() || out.scalar_type() != layout.dtype || out.device() != layout.device ||
        out.sizes().vec() != layout.output_shapes[o]) {
      throw Error("stitched (CUDA): output " + std::to_string(o) + " must be a contiguous " +
                  c10::toString(layout.dtype) + " tensor of the layout's shape on " + layout.device.str());
    }
  }
  const StitchCudaSpec spec =
      MakeStitchCudaSpec(program, DtypeName(layout.dtype), layout.domain, layout.split, layout.strides);

  c10::cuda::CUDAGuard device_guard(layout.device);
  const int device = layout.device.has_index() ? layout.device.index() : c10::cuda::current_device();
  const std::string key = text + "\n" + spec.Key() + "\ndevice=" + std::to_string(device);
  KernelCache& cache = KernelCache::Get();
  std::shared_ptr<const CompiledStitchKernel> kernel = cache.Find(key);
  if (!kernel) kernel = cache.Insert(key, Compile(program, text, spec, device));
  if (kernel->empty) return;

  // cudaLaunchKernel copies each argument from the address given: one device pointer per tensor.
  std::vector<void*> pointers;
  for (const at::Tensor& t : inputs) pointers.push_back(const_cast<void*>(t.const_data_ptr()));
  for (at::Tensor& t : outputs) pointers.push_back(t.data_ptr());
  std::vector<void*> arguments;
  for (void*& p : pointers) arguments.push_back(&p);
  const cudaStream_t stream = at::cuda::getCurrentCUDAStream(static_cast<c10::DeviceIndex>(device)).stream();
  CheckCuda(cudaLaunchKernel(reinterpret_cast<const void*>(kernel->kernel), dim3(kernel->launch.grid),
                             dim3(kernel->launch.block), arguments.data(), kernel->launch.shared_bytes, stream),
            "launching " + kernel->name, Describe(text, spec));
}

}  // namespace autograph

#endif  // AUTOGRAPH_WITH_CUDA
