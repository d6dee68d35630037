#pragma once
// Substitution for CPU targets: a linear whose weight is a constant float32 matrix calls
// autograph::packed_linear (ops/register_packed_linear.cpp), which packs that weight once, on the
// first call, for MKL's GEMM or oneDNN's, whichever it measures faster on the CPU it runs on. MKL's
// packed GEMM is what torch.compile's freezing uses; on an AMD EPYC, oneDNN's ran BERT-base's linears
// far faster (bench/results/export-path-2026-11-26g-cpu; plain aten::linear, and the transposed-weight
// matmul that PrepackForOneDnn otherwise leaves, call MKL's unpacked GEMM).
#include <memory>

namespace torch::jit {
struct Graph;
}  // namespace torch::jit

namespace autograph {

// Rewrites a lowered (frozen) graph in place; returns how many linears now call packed_linear.
int PackConstantLinears(std::shared_ptr<torch::jit::Graph>& graph);

}  // namespace autograph
