// autograph::loaded_compiled_parts and autograph::release_compiled_parts: the compiled parts this
// process holds loaded (Inductor's packages, OpenVINO's compiled models, ONNX Runtime's sessions), by
// the digests their specs name, and their release, so that optimize can drop what the candidates it
// rejects loaded; a released part that runs again is loaded again from its package tensor.
#include <torch/library.h>

#include <cstdint>
#include <string>
#include <vector>

#include "executor/inductor_part.h"
#include "executor/onnxruntime_part.h"
#include "executor/op_errors.h"
#include "executor/openvino_part.h"

namespace autograph {
namespace {

std::vector<std::string> LoadedCompiledPartsOp() {
  return WithTorchErrors([] {
    std::vector<std::string> digests = LoadedInductorParts();
    for (const std::vector<std::string>& more : {LoadedOpenVinoParts(), LoadedOnnxRuntimeParts()})
      digests.insert(digests.end(), more.begin(), more.end());
    return digests;
  });
}

int64_t ReleaseCompiledPartsOp(std::vector<std::string> digests) {
  return WithTorchErrors([&] {
    return ReleaseInductorParts(digests) + ReleaseOpenVinoParts(digests) + ReleaseOnnxRuntimeParts(digests);
  });
}

}  // namespace
}  // namespace autograph

// Conservative aliasing: both read or change state outside their arguments, so TorchScript must
// neither reorder nor drop a call.
TORCH_LIBRARY_FRAGMENT(autograph, m) {
  m.def(torch::schema("loaded_compiled_parts() -> str[]", c10::AliasAnalysisKind::CONSERVATIVE),
        TORCH_FN(autograph::LoadedCompiledPartsOp));
  m.def(torch::schema("release_compiled_parts(str[] digests) -> int", c10::AliasAnalysisKind::CONSERVATIVE),
        TORCH_FN(autograph::ReleaseCompiledPartsOp));
}
