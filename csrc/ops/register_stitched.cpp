// autograph::stitched(Tensor[] inputs, str program) -> Tensor[]: a group of memory-intensive
// operators as one kernel. The program is plain text (see autograph/stitch_program.h), so a module
// that calls the op saves and loads like any TorchScript module. Parsed programs are cached by text.
// A fragment of the library that register_autograph.cpp defines.
#include <torch/library.h>

#include <memory>
#include <mutex>
#include <unordered_map>

#include "autograph/error.h"
#include "ops/stitched_kernels.h"
#include "stitch/stitch_program.h"

namespace autograph {
namespace {

std::shared_ptr<const StitchProgram> CachedProgram(const std::string& text) {
  static std::mutex mutex;
  static std::unordered_map<std::string, std::shared_ptr<const StitchProgram>> cache;
  std::lock_guard<std::mutex> lock(mutex);
  auto it = cache.find(text);
  if (it != cache.end()) return it->second;
  auto program = std::make_shared<const StitchProgram>(ParseStitchProgram(text));
  cache.emplace(text, program);
  return program;
}

std::vector<at::Tensor> StitchedOp(const std::vector<at::Tensor>& inputs, const std::string& text) {
  try {
    std::shared_ptr<const StitchProgram> program = CachedProgram(text);
    StitchLayout layout = MakeStitchLayout(*program, inputs);
    std::vector<at::Tensor> outputs = AllocateStitchOutputs(layout);
    if (layout.device.is_cpu()) {
      RunStitchedCpu(*program, layout, inputs, outputs);
    } else if (layout.device.is_cuda()) {
#ifdef AUTOGRAPH_WITH_CUDA
      RunStitchedCuda(*program, text, layout, inputs, outputs);
#else
      throw Error("stitched: this build of autograph has no CUDA support (rebuild with nvcc and a CUDA torch)");
#endif
    } else {
      throw InputError("stitched: tensors on " + layout.device.str() + " are not supported (cpu or cuda)");
    }
    return outputs;
  } catch (const InputError& e) {
    TORCH_CHECK_VALUE(false, "autograph::stitched: ", e.what());  // ValueError in Python
  } catch (const Error& e) {
    TORCH_CHECK(false, "autograph::stitched: ", e.what());
  } catch (const c10::Error& e) {
    TORCH_CHECK_VALUE(false, "autograph::stitched: ", FirstLineOf(e), " (program: ", text, ")");
  }
}

}  // namespace
}  // namespace autograph

TORCH_LIBRARY_FRAGMENT(autograph, m) {
  // Pure: fresh outputs, reads its inputs only.
  m.def("stitched(Tensor[] inputs, str program) -> Tensor[]", &autograph::StitchedOp);
  // Which build of the CPU kernel runs here ("AVX2" or "DEFAULT"), for tests and bug reports.
  m.def("stitched_cpu_capability() -> str", [] { return std::string(autograph::StitchedCpuCapability()); });
}
