#pragma once
// autograph::optimize: a TorchScript module in, an ordinary TorchScript module out, whose forward
// runs a schedule of stages through autograph::run(Tensor[] inputs, Program program) -> Tensor[].
#include "autograph/optimize_options.h"
#include "autograph/optimize_report.h"

namespace torch::jit {
struct Module;
}

namespace autograph {

// Throws ModelLoadError/InputError/UnsupportedModelError/Error with a clear message.
torch::jit::Module optimize(const torch::jit::Module& module, const OptimizeOptions& options,
                            OptimizeReport* report = nullptr);

}  // namespace autograph
