#pragma once
// How one call of a stitched program maps its tensors onto the iteration domain: the broadcast
// shape of the inputs, split into rows (leading dims) and columns (the reduced trailing dims, or the
// last dim when the program has no reductions), and each input's element strides over the domain
// (0 along broadcast dims), so non-contiguous and broadcast inputs are read in place.
#include <ATen/core/Tensor.h>

#include <vector>

#include "stitch/stitch_program.h"

namespace autograph {

struct StitchLayout {
  std::vector<int64_t> domain;                // broadcast shape of the inputs
  int split = 0;                              // domain dims [0, split) are rows, [split, end) columns
  int64_t rows = 1, cols = 1;
  std::vector<std::vector<int64_t>> strides;  // per input, one per domain dim
  std::vector<std::vector<int64_t>> output_shapes;
  c10::ScalarType dtype = c10::ScalarType::Float;
  c10::Device device = c10::kCPU;
};

// Checks the inputs against the program (count, one floating dtype, one device, broadcastable,
// at least `reduce k` dims) and throws autograph::InputError naming what is wrong.
StitchLayout MakeStitchLayout(const StitchProgram& program, const std::vector<at::Tensor>& inputs);

// Contiguous outputs of the layout's shapes, dtype and device.
std::vector<at::Tensor> AllocateStitchOutputs(const StitchLayout& layout);

// Element offset of (row, col) in a tensor with `strides` over the layout's domain: rows and
// columns are mixed-radix indices over the row and column dims.
int64_t RowOffset(const StitchLayout& layout, const std::vector<int64_t>& strides, int64_t row);
int64_t ColOffset(const StitchLayout& layout, const std::vector<int64_t>& strides, int64_t col);

}  // namespace autograph
