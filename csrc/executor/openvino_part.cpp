// The runner slot of autograph::run_openvino_part; see openvino_part.h.
#include "executor/openvino_part.h"

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
std::shared_ptr<const OpenVinoPartRunner>& Slot() {
  static std::shared_ptr<const OpenVinoPartRunner> runner;
  return runner;
}

std::shared_ptr<const OpenVinoPartRunner> Runner() {
  std::lock_guard<std::mutex> lock(RunnerMutex());
  return Slot();
}

}  // namespace

void SetOpenVinoPartRunner(OpenVinoPartRunner runner) {
  auto installed = std::make_shared<const OpenVinoPartRunner>(std::move(runner));
  std::lock_guard<std::mutex> lock(RunnerMutex());
  Slot() = std::move(installed);
}

std::vector<at::Tensor> RunOpenVinoPart(const std::vector<at::Tensor>& inputs, const at::Tensor& package,
                                        std::string_view spec) {
  const std::shared_ptr<const OpenVinoPartRunner> runner = Runner();
  if (!runner || !runner->run) {
    throw Error(
        "run_openvino_part: this program has a part compiled by OpenVINO, and OpenVINO's runner is not loaded: "
        "load libautograph_openvino.so (autograph.load_library() does, where the openvino package is installed: "
        "pip install openvino), or optimize the model again with openvino=False");
  }
  return runner->run(inputs, package, spec);
}

std::vector<std::string> LoadedOpenVinoParts() {
  const std::shared_ptr<const OpenVinoPartRunner> runner = Runner();
  return runner && runner->loaded ? runner->loaded() : std::vector<std::string>{};
}

int64_t ReleaseOpenVinoParts(const std::vector<std::string>& digests) {
  const std::shared_ptr<const OpenVinoPartRunner> runner = Runner();
  return runner && runner->release ? runner->release(digests) : 0;
}

}  // namespace autograph
