#pragma once
// A part of a plan compiled by AOTInductor: a .pt2 package (generated kernels, frozen weights inside)
// that the executor calls like any operator, through autograph::run_inductor_part. The package
// travels as a uint8 tensor among the program's weights, so saving the program (torch.export.save,
// an AOTInductor package of it) carries it; it is loaded once per process, keyed by the digest its
// spec names, with torch::inductor::AOTIModelPackageLoader (no Python at run time), and stays loaded
// until released (ReleaseInductorParts).
#include <ATen/core/Tensor.h>

#include <cstdint>
#include <string>
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

// The digests of the packages loaded now, each once, sorted.
std::vector<std::string> LoadedInductorParts();

// Unloads the packages of these digests (a rejected candidate's: their model containers, on the device
// for CUDA parts, are large; their unpacked files go with them) and returns how many were released;
// unknown digests are skipped. A CUDA Graph captured from a program calling a part replays its kernels
// on the container's memory, so the graph holds the part (CaptureKeepAlive) and the container goes with
// the last such graph. Releasing is always safe: a call running one now finishes on it, and the next call of a
// released part loads it again from its package tensor, which costs a reload and nothing else.
// Thread-safe.
int64_t ReleaseInductorParts(const std::vector<std::string>& digests);

// What ImportAtenGraph plans a compiled part with (Inductor's, or another compiler's: compiled_part_ops.h):
// its FLOPs and whether it is compute-bound, from the spec.
struct InductorPartCost {
  double flops = 0;
  bool compute_bound = false;
};
InductorPartCost InductorPartCostOf(std::string_view spec);

inline constexpr const char* kInductorPartOp = "autograph::run_inductor_part";

}  // namespace autograph
