// The runner slot of autograph::run_openvino_part; see openvino_part.h.
#include "executor/openvino_part.h"

#include <memory>
#include <utility>

#include "autograph/error.h"
#include "executor/part_runner_slot.h"

namespace autograph {
namespace {

PartRunnerSlot<OpenVinoPartRunner>& Slot() {
  static PartRunnerSlot<OpenVinoPartRunner> slot;
  return slot;
}

}  // namespace

void SetOpenVinoPartRunner(OpenVinoPartRunner runner) { Slot().Install(std::move(runner)); }

std::vector<at::Tensor> RunOpenVinoPart(const std::vector<at::Tensor>& inputs, const at::Tensor& package,
                                        std::string_view spec) {
  const std::shared_ptr<const OpenVinoPartRunner> runner = Slot().Get();
  if (!runner) {
    throw Error(
        "run_openvino_part: this program has a part compiled by OpenVINO, and OpenVINO's runner is not loaded: "
        "load libautograph_openvino.so (autograph.load_library() does, where the openvino package is installed: "
        "pip install openvino), or optimize the model again with openvino=False");
  }
  return runner->run(inputs, package, spec);
}

std::vector<std::string> LoadedOpenVinoParts() { return Slot().Loaded(); }

int64_t ReleaseOpenVinoParts(const std::vector<std::string>& digests) { return Slot().Release(digests); }

}  // namespace autograph
