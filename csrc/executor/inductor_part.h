#pragma once
// A part of a plan compiled by AOTInductor: a .pt2 package (generated kernels, frozen weights inside)
// that the executor calls like any operator, through autograph::run_inductor_part. The package
// travels as a uint8 tensor among the program's weights, so saving the program (torch.export.save,
// an AOTInductor package of it) carries it; it is loaded once per process, keyed by the digest its
// spec names, with torch::inductor::AOTIModelPackageLoader (no Python at run time).
#include <ATen/core/Tensor.h>

#include <string_view>
#include <vector>

namespace autograph {

// `spec` is JSON: {"format": "autograph-inductor-part", "digest": "<sha256 of the package>", "device":
// "cpu", "outputs": [{"shape", "stride", "dtype"}...], "flops": n, "compute_bound": bool}. Runs the
// package on `inputs` on the current stream. Throws InputError for a package that is not a 1-d uint8
// CPU tensor or a spec that does not parse, Error when the package does not load (damaged, or built
// for another torch or device) or returns other outputs than the spec lists. Thread-safe.
std::vector<at::Tensor> RunInductorPart(const std::vector<at::Tensor>& inputs, const at::Tensor& package,
                                        std::string_view spec);

// What ImportAtenGraph plans a compiled part with (Inductor's, or OpenVINO's: executor/openvino_part.h):
// its FLOPs and whether it is compute-bound, from the spec.
struct InductorPartCost {
  double flops = 0;
  bool compute_bound = false;
};
InductorPartCost InductorPartCostOf(std::string_view spec);

inline constexpr const char* kInductorPartOp = "autograph::run_inductor_part";

}  // namespace autograph
