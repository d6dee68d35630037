#pragma once
// Scopes over PyTorch's float32 precision switches for CUDA's matmuls (cuBLAS) and convolutions and RNNs
// (cuDNN), each giving the process's switches back as they were when it ends.
//
// Tf32Scope: TF32 while a program that asks for it runs (ExecutorOptions::tf32: option precision tf32,
// kept only where its outputs met the tolerance). The switches are process-wide, so they are switched
// once for all such programs running at the same time (the first to enter saves them, the last to leave
// gives them back); other work on other threads meanwhile computes as they say.
//
// FullPrecisionScope: full float32 (TF32 off), for the reference a lowered candidate is judged against
// while optimize runs; not for use beside running programs.

#include <cstdint>
#include <memory>
#include <vector>

namespace autograph {

// The switches that decide how CUDA's float32 (and reduced-precision) matmuls, convolutions and RNNs
// compute, as numbers: a captured CUDA Graph replays the kernels chosen under the switches at capture,
// so they are part of its key (a capture under TF32 must not replay after the user turned TF32 off).
std::vector<int64_t> Float32SwitchesKey();

struct Float32Switches;  // the switches as a scope found them (float32_switches.cpp)

class Tf32Scope {
 public:
  explicit Tf32Scope(bool on);  // nothing changes when !on
  ~Tf32Scope();
  Tf32Scope(const Tf32Scope&) = delete;
  Tf32Scope& operator=(const Tf32Scope&) = delete;

 private:
  bool on_;
};

class FullPrecisionScope {
 public:
  FullPrecisionScope();
  ~FullPrecisionScope();
  FullPrecisionScope(const FullPrecisionScope&) = delete;
  FullPrecisionScope& operator=(const FullPrecisionScope&) = delete;

 private:
  std::unique_ptr<Float32Switches> saved_;
};

}  // namespace autograph
