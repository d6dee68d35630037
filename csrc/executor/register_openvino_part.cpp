// autograph::run_openvino_part: an OpenVINO-compiled part of a plan (see openvino_part.h). Declared
// here, in the runtime, so a program holding one always loads; it runs once libautograph_openvino.so
// has installed its runner. Only autograph's executor calls it, inside autograph::execute, so it
// needs no fake implementation.
#include <torch/library.h>

#include "executor/op_errors.h"
#include "executor/openvino_part.h"

namespace autograph {
namespace {

std::vector<at::Tensor> RunOpenVinoPartOp(const std::vector<at::Tensor>& inputs, const at::Tensor& package,
                                          c10::string_view spec) {
  return WithTorchErrors([&] { return RunOpenVinoPart(inputs, package, std::string_view(spec.data(), spec.size())); });
}

}  // namespace
}  // namespace autograph

TORCH_LIBRARY_FRAGMENT(autograph, m) {
  m.def("run_openvino_part(Tensor[] inputs, Tensor package, str spec) -> Tensor[]");
  m.impl("run_openvino_part", c10::DispatchKey::CompositeExplicitAutograd, TORCH_FN(autograph::RunOpenVinoPartOp));
}
