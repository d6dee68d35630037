#pragma once
// autograph::optimize: a TorchScript module in, an ordinary TorchScript module out, whose forward
// (the original's signature) runs a schedule of stages through autograph::call(arguments, program).
#include "autograph/optimize_options.h"
#include "autograph/optimize_report.h"

namespace torch::jit {
struct Module;
}

namespace autograph {

// A model autograph cannot take apart (a forward that cannot be frozen, one that still reads the
// module, no single return value) comes back unchanged, with one warning and report->fallback saying
// why. Throws InputError for bad options or example inputs, Error for failures of the environment
// (no CUDA device), each with a clear message.
torch::jit::Module optimize(const torch::jit::Module& module, const OptimizeOptions& options,
                            OptimizeReport* report = nullptr);

}  // namespace autograph
