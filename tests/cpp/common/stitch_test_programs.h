#pragma once
// Stitch programs shared by the CUDA source and CUDA execution tests: each mapping the generator has
// (elementwise, one reduction, layer norm, reductions in sequence, row outputs with keepdim).

namespace autograph {
namespace {

// elementwise chain: tanh(gelu((x + y) * 0.5) * sigmoid(z)), plus a row output and a second full output.
[[maybe_unused]] const char* kElementwise =
    "reduce 0; in 0; in 1; add 0 1; const 0.5; mul 2 3; gelu 4; in 2; sigmoid 6; mul 5 7; tanh 8; gelu_tanh 0; "
    "max 9 10; const 2; pow 1 12; const 3; mul 12 14; out 11; out 13; outrow 15";
[[maybe_unused]] const char* kSoftmax = "reduce 1; in 0; const 8; div 0 1; rowmax 2; sub 2 3; exp 4; rowsum 5; div 5 6; out 7";
[[maybe_unused]] const char* kLayerNorm =
    "reduce 1; in 0; in 1; in 2; rowmean 0; sub 0 3; mul 4 4; rowmean 5; const 1e-5; add 6 7; rsqrt 8; mul 4 9; "
    "mul 10 1; add 11 2; out 12";
// Reductions in sequence: rowmax, rowsum of exp(x - max) (logsumexp), then rowmin of x - logsumexp.
[[maybe_unused]] const char* kTwoReductions =
    "reduce 1; in 0; rowmax 0; sub 0 1; exp 2; rowsum 3; log 4; add 5 1; sub 0 6; rowmin 7; outrow 6; outrow 8; out 7";
[[maybe_unused]] const char* kKeepdim = "reduce 2; in 0; rowmean 0; rowmax 0; sub 2 1; outrow 1 keepdim; outrow 3";

}  // namespace
}  // namespace autograph
