// The runner slot of autograph::run_onnxruntime_part; see onnxruntime_part.h.
#include "executor/onnxruntime_part.h"

#include <memory>
#include <mutex>
#include <utility>

#include "autograph/error.h"

namespace autograph {
namespace {

std::mutex& RunnerMutex() {
  static std::mutex mutex;
  return mutex;
}

// Held by shared_ptr so that a call copies a pointer, not the three functions.
std::shared_ptr<const OnnxRuntimePartRunner>& Slot() {
  static std::shared_ptr<const OnnxRuntimePartRunner> runner;
  return runner;
}

std::shared_ptr<const OnnxRuntimePartRunner> Runner() {
  std::lock_guard<std::mutex> lock(RunnerMutex());
  return Slot();
}

}  // namespace

void SetOnnxRuntimePartRunner(OnnxRuntimePartRunner runner) {
  auto installed = std::make_shared<const OnnxRuntimePartRunner>(std::move(runner));
  std::lock_guard<std::mutex> lock(RunnerMutex());
  Slot() = std::move(installed);
}

std::vector<at::Tensor> RunOnnxRuntimePart(const std::vector<at::Tensor>& inputs, const at::Tensor& package,
                                           std::string_view spec) {
  const std::shared_ptr<const OnnxRuntimePartRunner> runner = Runner();
  if (!runner || !runner->run) {
    throw Error(
        "run_onnxruntime_part: this program has a part compiled by ONNX Runtime, and ONNX Runtime's runner is not "
        "loaded: load libautograph_onnxruntime.so (autograph.load_library() does, where the onnxruntime package is "
        "installed: pip install onnxruntime), or optimize the model again with onnxruntime=False");
  }
  return runner->run(inputs, package, spec);
}

std::vector<std::string> LoadedOnnxRuntimeParts() {
  const std::shared_ptr<const OnnxRuntimePartRunner> runner = Runner();
  return runner && runner->loaded ? runner->loaded() : std::vector<std::string>{};
}

int64_t ReleaseOnnxRuntimeParts(const std::vector<std::string>& digests) {
  const std::shared_ptr<const OnnxRuntimePartRunner> runner = Runner();
  return runner && runner->release ? runner->release(digests) : 0;
}

}  // namespace autograph
