#pragma once
// CUDA C++ source for one stitch program specialized to one call's layout (shapes, strides, dtype),
// compiled at run time with NVRTC by the CUDA implementation of autograph::stitched. Torch-free, so
// that the code generation is tested (and compiled to PTX) on machines without a GPU.
//
// Mapping (see GenerateStitchCudaKernel):
//  - no reductions: one thread per element of the domain, grid-stride loop over rows * cols;
//  - reductions: T threads per row (T a power of two). T <= 32: 256 / T rows per block, reductions by
//    warp shuffles within the row's lanes; T > 32: one row per block, warp shuffles then shared memory
//    across warps. Each thread owns columns lane, lane + T, ...; when that is at most
//    kStitchMaxRegisterElements per thread, full values stay in registers between the passes over
//    the row ("registers" mode), otherwise each pass streams over the columns again and recomputes
//    what it needs from the inputs ("streaming" mode, any row length).
#include <cstdint>
#include <string>
#include <vector>

#include "stitch/stitch_program.h"

namespace autograph {

// Elements per thread and live full value held in registers; longer rows stream.
constexpr int kStitchMaxRegisterElements = 8;
constexpr int kStitchMaxThreadsPerRow = 1024;
constexpr int kStitchElementwiseBlock = 256;

// What the generated kernel is specialized to.
struct StitchCudaSpec {
  std::string dtype = "float";  // storage type: "float", "double", "__half" or "__nv_bfloat16"
  std::vector<int64_t> domain;  // broadcast shape of the inputs
  int split = 0;                // domain dims [0, split) are rows, [split, end) columns
  int64_t rows = 1, cols = 1;
  std::vector<std::vector<int64_t>> strides;  // per input, element strides over the domain (0: broadcast)
  std::vector<bool> row_outputs;              // per program output: row (true) or full (false)

  // Everything above, as text: with the program's text, the kernel cache key.
  std::string Key() const;
};

// Checks the dims against each other and fills rows, cols and row_outputs from the program.
StitchCudaSpec MakeStitchCudaSpec(const StitchProgram& program, const std::string& dtype,
                                  const std::vector<int64_t>& domain, int split,
                                  const std::vector<std::vector<int64_t>>& strides);

struct StitchCudaLaunch {
  unsigned grid = 1, block = 1;  // 1-D
  unsigned shared_bytes = 0;     // dynamic shared memory
};

struct StitchCudaKernel {
  std::string name;    // of the extern "C" __global__ function
  std::string source;  // self-contained CUDA C++ (no #include)
  StitchCudaLaunch launch;
  bool empty = false;  // nothing to compute (zero rows, or no elements and no row outputs): do not launch
  // Parameters: one pointer per tensor input (const), then one per program output, in order.
  // How the work was mapped, for tests and error messages.
  std::string mode;                // "elementwise", "rows-registers" or "rows-streaming"
  int threads_per_row = 0;         // T (reductions only)
  int elements_per_thread = 0;     // ceil(cols / T) (reductions only)
  int row_dims = 0, col_dims = 0;  // after coalescing (elementwise: all dims in col_dims)
  bool index64 = false;            // 64-bit index math
};

// Generates the kernel for `program` (validated) under `spec`. Throws autograph::Error when the
// spec does not fit the program (input count, dims, dtype).
StitchCudaKernel GenerateStitchCudaKernel(const StitchProgram& program, const StitchCudaSpec& spec);

// NVRTC options for compiling a generated kernel for `arch` ("compute_90" for PTX, "sm_90" for a cubin).
std::vector<std::string> StitchNvrtcOptions(const std::string& arch);

}  // namespace autograph
