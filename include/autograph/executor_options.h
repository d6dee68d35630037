#pragma once
// How a schedule runs: on which device, and on CUDA whether the whole run is replayed as one CUDA Graph.
#include <c10/core/Device.h>

#include <vector>

namespace autograph {

struct ExecutorOptions {
  c10::Device device = c10::kCPU;
  bool cuda_graph = false;  // CUDA only: capture the whole multi-stream run once per input shape
  // CUDA Graph mode: the most graphs (input shapes) kept, each with its memory pool; the least
  // recently used is released when a new shape needs one, and captured again when it returns.
  int max_cuda_graphs = 16;
  // CUDA only: float32 matmuls and convolutions compute in TF32 while the program runs (Tf32Scope):
  // option precision tf32, set on a program whose outputs met the tolerance that way.
  bool tf32 = false;
  // TorchScript graphs: every operator's own allow_tf32 argument read as false. A traced convolution
  // (aten::_convolution) holds the cuDNN TF32 switch as it was at trace time, out of reach of the
  // process's switches; the float32 reference a lowered candidate is judged against sets this.
  bool full_float32 = false;
  // CUDA Graph mode: per input, whether the graph reads the caller's own tensor instead of a copy (an
  // exported program's weights and packages: the same tensors every call). Set by whoever knows which
  // inputs those are (AtenProgram, from its graph), not saved with a program.
  std::vector<bool> bound_inputs{};  // ({}: ExecutorOptions{device, cuda_graph} leaves it empty, unwarned)
};

}  // namespace autograph
