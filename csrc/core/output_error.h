#pragma once
// How far a program's outputs are from a reference's, relative to each output's scale: the measure
// option tolerance bounds (option precision).
#include <ATen/core/Tensor.h>

#include <vector>

namespace autograph {

// The largest |got - want| over max |want|, the worst over the outputs: NaN where either holds a NaN or
// an infinity; infinite where an output differs in shape or dtype, or an integer one in any value.
double RelativeError(const std::vector<at::Tensor>& got, const std::vector<at::Tensor>& want);

}  // namespace autograph
