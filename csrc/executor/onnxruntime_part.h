#pragma once
// A part of a plan compiled by ONNX Runtime (its CPU provider), called by the executor like any operator
// through autograph::run_onnxruntime_part(Tensor[] inputs, Tensor package, str spec) -> Tensor[]. The
// package is the part's ONNX model in one uint8 tensor among the program's weights, like an Inductor
// part's. The operator is declared by the runtime so that every program loads; running it needs ONNX
// Runtime, which libautograph_onnxruntime.so loads: loading that library installs the runner
// (SetOnnxRuntimePartRunner), so the runtime itself never links ONNX Runtime.
#include <ATen/core/Tensor.h>

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace autograph {

inline constexpr const char* kOnnxRuntimePartOp = "autograph::run_onnxruntime_part";

// Package layout: "AGORT1\n", then the serialized ONNX model (protobuf, weights inside).
inline constexpr std::string_view kOnnxRuntimePackageMagic = "AGORT1\n";

// What libautograph_onnxruntime.so provides: running a part, and listing and releasing the parts it
// has compiled (by the digests their specs name), as LoadedInductorParts and ReleaseInductorParts
// do for Inductor's (executor/inductor_part.h).
struct OnnxRuntimePartRunner {
  std::function<std::vector<at::Tensor>(const std::vector<at::Tensor>&, const at::Tensor&, std::string_view)> run;
  std::function<std::vector<std::string>()> loaded;
  std::function<int64_t(const std::vector<std::string>&)> release;
};

// Installed once by libautograph_onnxruntime.so when it loads.
void SetOnnxRuntimePartRunner(OnnxRuntimePartRunner runner);

// Runs the part. `spec` is JSON: {"format": "autograph-onnxruntime-part", "digest", "device": "cpu",
// "outputs": [{"shape", "stride", "dtype"}...] (-1: a size known when the part runs), "flops",
// "compute_bound", optionally "precision": "fp32" (the default and, for now, the only one) and "spinning":
// whether its thread pool spins between parallel work (default false; true where the part is the whole
// program: nothing else needs the cores meanwhile)}. Throws
// Error naming what to load when no runner is installed, and the runner's errors otherwise.
std::vector<at::Tensor> RunOnnxRuntimePart(const std::vector<at::Tensor>& inputs, const at::Tensor& package,
                                           std::string_view spec);

// The digests of the parts compiled now, each once, sorted; none where no runner is installed.
std::vector<std::string> LoadedOnnxRuntimeParts();

// Drops the sessions of these digests and returns how many were compiled (0 where no runner is
// installed). As with Inductor's parts this is always safe: a call running one finishes on it, and
// the next call compiles it again from its package tensor.
int64_t ReleaseOnnxRuntimeParts(const std::vector<std::string>& digests);

}  // namespace autograph
