// The runner slot of autograph::run_openvino_part; see openvino_part.h.
#include "executor/openvino_part.h"

#include <mutex>
#include <utility>

#include "autograph/error.h"

namespace autograph {
namespace {

std::mutex& RunnerMutex() {
  static std::mutex mutex;
  return mutex;
}

OpenVinoPartRunner& Runner() {
  static OpenVinoPartRunner runner;
  return runner;
}

}  // namespace

void SetOpenVinoPartRunner(OpenVinoPartRunner runner) {
  std::lock_guard<std::mutex> lock(RunnerMutex());
  Runner() = std::move(runner);
}

std::vector<at::Tensor> RunOpenVinoPart(const std::vector<at::Tensor>& inputs, const at::Tensor& package,
                                        std::string_view spec) {
  OpenVinoPartRunner runner;
  {
    std::lock_guard<std::mutex> lock(RunnerMutex());
    runner = Runner();
  }
  if (!runner) {
    throw Error(
        "run_openvino_part: this program has a part compiled by OpenVINO, and OpenVINO's runner is not loaded: "
        "load libautograph_openvino.so (autograph.load_library() does, where the openvino package is installed: "
        "pip install openvino), or optimize the model again with openvino=False");
  }
  return runner(inputs, package, spec);
}

}  // namespace autograph
