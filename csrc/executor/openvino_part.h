#pragma once
// A part of a plan compiled by OpenVINO (its CPU plugin), called by the executor like any operator
// through autograph::run_openvino_part(Tensor[] inputs, Tensor package, str spec) -> Tensor[]. The
// package is the part's OpenVINO IR (model XML and weights) in one uint8 tensor among the program's
// weights, like an Inductor part's. The operator is declared by the runtime so that every program
// loads; running it needs OpenVINO, which libautograph_openvino.so links: loading that library
// installs the runner (SetOpenVinoPartRunner), so the runtime itself never links OpenVINO.
#include <ATen/core/Tensor.h>

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace autograph {

inline constexpr const char* kOpenVinoPartOp = "autograph::run_openvino_part";

// Package layout: "AGOV1\n", the XML's byte count as 8 little-endian bytes, the XML, the weights.
inline constexpr std::string_view kOpenVinoPackageMagic = "AGOV1\n";

// What libautograph_openvino.so provides: running a part, and listing and releasing the parts it
// has compiled (by the digests their specs name), as LoadedInductorParts and ReleaseInductorParts
// do for Inductor's (executor/inductor_part.h).
struct OpenVinoPartRunner {
  std::function<std::vector<at::Tensor>(const std::vector<at::Tensor>&, const at::Tensor&, std::string_view)> run;
  std::function<std::vector<std::string>()> loaded;
  std::function<int64_t(const std::vector<std::string>&)> release;
};

// Installed once by libautograph_openvino.so when it loads.
void SetOpenVinoPartRunner(OpenVinoPartRunner runner);

// Runs the part. `spec` is JSON: {"format": "autograph-openvino-part", "digest", "outputs":
// [{"shape", "stride", "dtype"}...], "flops", "compute_bound", optionally "precision": "fp32" (the
// default) or "bf16", the inference precision OpenVINO compiles it with}. Throws Error naming what to load
// when no runner is installed, and the runner's errors otherwise.
std::vector<at::Tensor> RunOpenVinoPart(const std::vector<at::Tensor>& inputs, const at::Tensor& package,
                                        std::string_view spec);

// The digests of the parts compiled now, each once, sorted; none where no runner is installed.
std::vector<std::string> LoadedOpenVinoParts();

// Drops the compiled models of these digests and returns how many were compiled (0 where no runner is
// installed). As with Inductor's parts this is always safe: a call running one finishes on it, and
// the next call compiles it again from its package tensor.
int64_t ReleaseOpenVinoParts(const std::vector<std::string>& digests);

}  // namespace autograph
