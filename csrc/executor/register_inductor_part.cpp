// autograph::run_inductor_part: an AOTInductor-compiled part of a plan, called by the executor like
// any operator (see inductor_part.h). Only autograph's executor calls it, inside autograph::execute,
// so it needs no fake implementation.
#include <torch/library.h>

#include "executor/inductor_part.h"
#include "executor/op_errors.h"

namespace autograph {
namespace {

std::vector<at::Tensor> RunInductorPartOp(const std::vector<at::Tensor>& inputs, const at::Tensor& package,
                                          c10::string_view spec) {
  return WithTorchErrors([&] { return RunInductorPart(inputs, package, std::string_view(spec.data(), spec.size())); });
}

}  // namespace
}  // namespace autograph

TORCH_LIBRARY_FRAGMENT(autograph, m) {
  m.def("run_inductor_part(Tensor[] inputs, Tensor package, str spec) -> Tensor[]");
  m.impl("run_inductor_part", c10::DispatchKey::CompositeExplicitAutograd, TORCH_FN(autograph::RunInductorPartOp));
}
