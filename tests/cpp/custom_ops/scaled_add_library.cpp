// A custom-operator library as users write them, for test_cli_load_library.py: one CPU operator
// that no other library of the process registers.
#include <torch/library.h>

#include <ATen/ATen.h>

namespace {

at::Tensor ScaledAdd(const at::Tensor& a, const at::Tensor& b, double scale) { return a + b * scale; }

}  // namespace

TORCH_LIBRARY(autograph_test_ops, m) { m.def("scaled_add(Tensor a, Tensor b, float scale) -> Tensor", &ScaledAdd); }
