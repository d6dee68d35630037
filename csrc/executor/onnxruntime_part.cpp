// The runner slot of autograph::run_onnxruntime_part; see onnxruntime_part.h.
#include "executor/onnxruntime_part.h"

#include <memory>
#include <utility>

#include "autograph/error.h"
#include "executor/part_runner_slot.h"

namespace autograph {
namespace {

PartRunnerSlot<OnnxRuntimePartRunner>& Slot() {
  static PartRunnerSlot<OnnxRuntimePartRunner> slot;
  return slot;
}

}  // namespace

void SetOnnxRuntimePartRunner(OnnxRuntimePartRunner runner) { Slot().Install(std::move(runner)); }

std::vector<at::Tensor> RunOnnxRuntimePart(const std::vector<at::Tensor>& inputs, const at::Tensor& package,
                                           std::string_view spec) {
  const std::shared_ptr<const OnnxRuntimePartRunner> runner = Slot().Get();
  if (!runner) {
    throw Error(
        "run_onnxruntime_part: this program has a part compiled by ONNX Runtime, and ONNX Runtime's runner is not "
        "loaded: load libautograph_onnxruntime.so (autograph.load_library() does, where the onnxruntime package is "
        "installed: pip install onnxruntime), or optimize the model again with onnxruntime=False");
  }
  return runner->run(inputs, package, spec);
}

std::vector<std::string> LoadedOnnxRuntimeParts() { return Slot().Loaded(); }

int64_t ReleaseOnnxRuntimeParts(const std::vector<std::string>& digests) { return Slot().Release(digests); }

}  // namespace autograph
