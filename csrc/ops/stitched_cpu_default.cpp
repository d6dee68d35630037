// The stitched CPU kernel for any CPU, built with CPU_CAPABILITY=DEFAULT (see CMakeLists.txt).
#include "ops/stitched_cpu_kernel.h"
