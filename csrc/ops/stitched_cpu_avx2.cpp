// The stitched CPU kernel for AVX2 + FMA, built with CPU_CAPABILITY=AVX2 and -mavx2 -mfma (see
// CMakeLists.txt); stitched_cpu.cpp calls it only where ATen runs its own AVX2 kernels.
#include "ops/stitched_cpu_kernel.h"
