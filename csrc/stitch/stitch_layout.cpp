#include "stitch/stitch_layout.h"

#include <ATen/ExpandUtils.h>
#include <ATen/ops/empty.h>

#include "autograph/error.h"
#include "core/op_graph.h"

namespace autograph {

namespace {

// Whether dim d and all column dims after it form one affine run for every input.
bool CollapsesWithNext(const StitchLayout& layout, int d) {
  const int dims = static_cast<int>(layout.domain.size());
  for (const auto& strides : layout.strides) {
    int64_t expected = -1;  // stride the next non-trivial dim (towards d) must have
    for (int k = dims - 1; k >= d; --k) {
      if (layout.domain[k] == 1) continue;
      if (expected >= 0 && strides[k] != expected) return false;
      expected = strides[k] * layout.domain[k];
    }
  }
  return true;
}

}  // namespace

StitchLayout MakeStitchLayout(const StitchProgram& program, const std::vector<at::Tensor>& inputs) {
  const int n = program.num_inputs();
  if (static_cast<int>(inputs.size()) != n) {
    throw InputError("stitched: the program reads " + std::to_string(n) + " tensor input(s), " +
                     std::to_string(inputs.size()) + " were given");
  }
  StitchLayout layout;
  std::vector<int64_t> domain;
  for (int i = 0; i < n; ++i) {
    const at::Tensor& t = inputs[i];
    if (!t.defined()) throw InputError("stitched: input " + std::to_string(i) + " is undefined");
    if (!at::isFloatingType(t.scalar_type())) {
      throw InputError(std::string("stitched: input ") + std::to_string(i) + " is " + c10::toString(t.scalar_type()) +
                       "; stitched programs compute on floating tensors only");
    }
    if (i == 0) {
      layout.dtype = t.scalar_type();
      layout.device = t.device();
      domain = t.sizes().vec();
      continue;
    }
    if (t.scalar_type() != layout.dtype) {
      throw InputError(std::string("stitched: input ") + std::to_string(i) + " is " + c10::toString(t.scalar_type()) +
                       ", input 0 is " + c10::toString(layout.dtype) + "; all inputs must share one dtype");
    }
    if (t.device() != layout.device) {
      throw InputError("stitched: input " + std::to_string(i) + " is on " + t.device().str() + ", input 0 on " +
                       layout.device.str() + "; all inputs must be on one device");
    }
    auto shape = at::infer_size_dimvector(domain, t.sizes());  // throws on mismatch
    domain.assign(shape.begin(), shape.end());
  }
  const int dims = static_cast<int>(domain.size());
  if (program.reduce_dims > dims) {
    throw InputError("stitched: the program reduces the last " + std::to_string(program.reduce_dims) +
                     " dims but the inputs broadcast to " + ShapeString(domain));
  }
  layout.domain = domain;
  for (const at::Tensor& t : inputs) {
    std::vector<int64_t> strides(dims, 0);
    const int offset = dims - static_cast<int>(t.dim());
    for (int d = 0; d < t.dim(); ++d) strides[offset + d] = t.size(d) == 1 ? 0 : t.stride(d);
    layout.strides.push_back(std::move(strides));
  }
  if (program.reduce_dims > 0) {
    layout.split = dims - program.reduce_dims;
  } else {
    // No reductions: any split is correct; take as many trailing dims as collapse into one strided
    // column dim for every input, so that kernels walk long affine columns.
    layout.split = std::max(dims - 1, 0);
    while (layout.split > 0 && CollapsesWithNext(layout, layout.split - 1)) --layout.split;
  }
  for (int d = 0; d < dims; ++d) (d < layout.split ? layout.rows : layout.cols) *= domain[d];
  for (const StitchOutput& o : program.outputs) {
    if (!program.is_row(o.value)) {
      layout.output_shapes.push_back(domain);
      continue;
    }
    std::vector<int64_t> shape(domain.begin(), domain.begin() + layout.split);
    if (o.keepdim) shape.resize(dims, 1);
    layout.output_shapes.push_back(std::move(shape));
  }
  return layout;
}

std::vector<at::Tensor> AllocateStitchOutputs(const StitchLayout& layout) {
  std::vector<at::Tensor> out;
  for (const auto& shape : layout.output_shapes) {
    out.push_back(at::empty(shape, at::TensorOptions().dtype(layout.dtype).device(layout.device)));
  }
  return out;
}

int64_t RowOffset(const StitchLayout& layout, const std::vector<int64_t>& strides, int64_t row) {
  int64_t offset = 0;
  for (int d = layout.split - 1; d >= 0; --d) {
    offset += (row % layout.domain[d]) * strides[d];
    row /= layout.domain[d];
  }
  return offset;
}

int64_t ColOffset(const StitchLayout& layout, const std::vector<int64_t>& strides, int64_t col) {
  int64_t offset = 0;
  for (int d = static_cast<int>(layout.domain.size()) - 1; d >= layout.split; --d) {
    offset += (col % layout.domain[d]) * strides[d];
    col /= layout.domain[d];
  }
  return offset;
}

}  // namespace autograph
