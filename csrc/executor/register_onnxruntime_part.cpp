// autograph::run_onnxruntime_part: an ONNX Runtime-compiled part of a plan (see onnxruntime_part.h).
// Declared here, in the runtime, so a program holding one always loads; it runs once
// libautograph_onnxruntime.so has installed its runner. Only autograph's executor calls it, inside
// autograph::execute, so it needs no fake implementation.
#include <torch/library.h>

#include "executor/onnxruntime_part.h"
#include "executor/op_errors.h"

namespace autograph {
namespace {

std::vector<at::Tensor> RunOnnxRuntimePartOp(const std::vector<at::Tensor>& inputs, const at::Tensor& package,
                                             c10::string_view spec) {
  return WithTorchErrors(
      [&] { return RunOnnxRuntimePart(inputs, package, std::string_view(spec.data(), spec.size())); });
}

}  // namespace
}  // namespace autograph

TORCH_LIBRARY_FRAGMENT(autograph, m) {
  m.def("run_onnxruntime_part(Tensor[] inputs, Tensor package, str spec) -> Tensor[]");
  m.impl("run_onnxruntime_part", c10::DispatchKey::CompositeExplicitAutograd,
         TORCH_FN(autograph::RunOnnxRuntimePartOp));
}
