#pragma once
// How far a program's outputs are from a reference's, relative to each output's scale: the measure
// option tolerance bounds (option precision).
#include <ATen/core/Tensor.h>

#include <vector>

namespace autograph {

// The largest |got - want| over max |want|, the worst over the outputs: NaN where either holds a NaN or
// an infinity; infinite where an output differs in shape or dtype, or an integer one in any value.
double RelativeError(const std::vector<at::Tensor>& got, const std::vector<at::Tensor>& want);

// RelativeError call by call (`got[k]` against `want[k]`, the outputs of one call each): the worst, NaN
// where any is NaN.
double LargestRelativeError(const std::vector<std::vector<at::Tensor>>& got,
                            const std::vector<std::vector<at::Tensor>>& want);

}  // namespace autograph
