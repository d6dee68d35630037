// autograph::stitched on the CPU: the empty domain, then the kernel for the instruction set ATen
// itself runs on (stitched_cpu_kernel.h, built once per capability).
#include <ATen/Version.h>

#include <string>

#include "ops/stitched_kernels.h"

namespace autograph {

namespace DEFAULT {
void RunStitchedCpuKernel(const StitchProgram&, const StitchLayout&, const std::vector<at::Tensor>&, std::vector<at::Tensor>&);
}
#ifdef AUTOGRAPH_STITCHED_AVX2
namespace AVX2 {
void RunStitchedCpuKernel(const StitchProgram&, const StitchLayout&, const std::vector<at::Tensor>&, std::vector<at::Tensor>&);
}
#endif

namespace {

// ATen's choice (its CPU's best, or ATEN_CPU_CAPABILITY), so a stitched group uses the vector width
// and functions of the operators it replaces.
bool UseAvx2() {
#ifdef AUTOGRAPH_STITCHED_AVX2
  static const bool avx2 = [] {
    const std::string capability = at::get_cpu_capability();
    return (capability == "AVX2" || capability == "AVX512") && __builtin_cpu_supports("avx2") &&
           __builtin_cpu_supports("fma");
  }();
  return avx2;
#else
  return false;
#endif
}

}  // namespace

const char* StitchedCpuCapability() { return UseAvx2() ? "AVX2" : "DEFAULT"; }

void RunStitchedCpu(const StitchProgram& program, const StitchLayout& layout, const std::vector<at::Tensor>& inputs,
                    std::vector<at::Tensor>& outputs) {
  if (layout.rows == 0 || layout.cols == 0) {
    // Empty domain: full outputs are empty; row outputs of an empty reduction are its identity.
    for (size_t o = 0; o < program.outputs.size(); ++o) {
      const StitchStatement& s = program.statements[program.outputs[o].value];
      if (!program.is_row(program.outputs[o].value) || outputs[o].numel() == 0) continue;
      TORCH_CHECK(s.op == StitchOp::RowSum, "stitched: ", NameOf(s.op),
                  " of an empty row is undefined (the rows have 0 columns)");
      outputs[o].zero_();
    }
    return;
  }
#ifdef AUTOGRAPH_STITCHED_AVX2
  if (UseAvx2()) return AVX2::RunStitchedCpuKernel(program, layout, inputs, outputs);
#endif
  DEFAULT::RunStitchedCpuKernel(program, layout, inputs, outputs);
}

}  // namespace autograph
