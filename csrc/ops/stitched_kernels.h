#pragma once
// The two implementations of autograph::stitched: each runs a validated program over inputs laid
// out by MakeStitchLayout into preallocated contiguous outputs, in one pass over memory.
#include <ATen/core/Tensor.h>

#include <string>
#include <vector>

#include "stitch/stitch_layout.h"
#include "stitch/stitch_program.h"

namespace autograph {

// CPU: parallel over rows; each row's columns are evaluated in tiles held in cache.
void RunStitchedCpu(const StitchProgram& program, const StitchLayout& layout, const std::vector<at::Tensor>& inputs,
                    std::vector<at::Tensor>& outputs);

// Which build of the CPU kernel runs here: "AVX2" where ATen runs its AVX2 or AVX-512 kernels,
// else "DEFAULT" (ATEN_CPU_CAPABILITY=default selects it, for tests).
const char* StitchedCpuCapability();

#ifdef AUTOGRAPH_WITH_CUDA
// CUDA: a kernel generated for the program and the layout (shapes, strides, dtype), compiled with
// NVRTC once and cached; `text` is the program's text (part of the cache key).
void RunStitchedCuda(const StitchProgram& program, const std::string& text, const StitchLayout& layout,
                     const std::vector<at::Tensor>& inputs, std::vector<at::Tensor>& outputs);
#endif

}  // namespace autograph
