// autograph::stitched on the CPU: rows in parallel; within a row the columns go in tiles that stay
// in cache. Each full value of the program is a tile-sized buffer, each row value a scalar, so every
// input element is loaded from memory once and every output element stored once. When a row has
// more columns than one tile holds, the passes that follow a reduction recompute the full values
// they need from the inputs (the inputs are read once per reduction level, from cache when the row
// fits it), as a GPU kernel does with rows longer than its registers hold.
#include <ATen/Dispatch.h>
#include <ATen/OpMathType.h>
#include <ATen/Parallel.h>
#include <ATen/ops/erf.h>
#include <ATen/ops/exp.h>
#include <ATen/ops/from_blob.h>
#include <ATen/ops/gelu.h>
#include <ATen/ops/log.h>
#include <ATen/ops/rsqrt.h>
#include <ATen/ops/sigmoid.h>
#include <ATen/ops/sqrt.h>
#include <ATen/ops/tanh.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>

#include "ops/stitched_kernels.h"

namespace autograph {

namespace {

constexpr int64_t kWholeRowColumns = 8192;  // rows up to this many columns are evaluated in one tile
constexpr int64_t kTileColumns = 2048;
constexpr int64_t kElementwiseTile = 16384;  // no reductions: tiles are independent work items
constexpr int64_t kVectorCallMin = 512;      // shorter tiles call scalar libm (ATen's per-call cost dominates)

template <typename T>
T Gelu(T x) {
  return T(0.5) * x * (T(1) + std::erf(x * T(M_SQRT1_2)));
}

template <typename T>
T GeluTanh(T x) {
  const T k = T(0.7978845608028654);  // sqrt(2 / pi)
  return T(0.5) * x * (T(1) + std::tanh(k * (x + T(0.044715) * x * x * x)));
}

template <typename T>
T Unary(StitchOp op, T x) {
  switch (op) {
    case StitchOp::Neg: return -x;
    case StitchOp::Exp: return std::exp(x);
    case StitchOp::Log: return std::log(x);
    case StitchOp::Sqrt: return std::sqrt(x);
    case StitchOp::Rsqrt: return T(1) / std::sqrt(x);
    case StitchOp::Tanh: return std::tanh(x);
    case StitchOp::Sigmoid: return T(1) / (T(1) + std::exp(-x));
    case StitchOp::Relu: return x < T(0) ? T(0) : x;  // NaN stays NaN, as torch.relu
    case StitchOp::Gelu: return Gelu(x);
    case StitchOp::GeluTanh: return GeluTanh(x);
    case StitchOp::Abs: return std::abs(x);
    case StitchOp::Reciprocal: return T(1) / x;
    case StitchOp::Erf: return std::erf(x);
    default: break;
  }
  TORCH_CHECK(false, "stitched: ", NameOf(op), " is not a unary op");
}

template <typename T>
T Binary(StitchOp op, T a, T b) {
  switch (op) {
    case StitchOp::Add: return a + b;
    case StitchOp::Sub: return a - b;
    case StitchOp::Mul: return a * b;
    case StitchOp::Div: return a / b;
    // torch.maximum / minimum: NaN if either is NaN
    case StitchOp::Max: return (a != a || b != b) ? std::numeric_limits<T>::quiet_NaN() : std::max(a, b);
    case StitchOp::Min: return (a != a || b != b) ? std::numeric_limits<T>::quiet_NaN() : std::min(a, b);
    case StitchOp::Pow: return std::pow(a, b);
    default: break;
  }
  TORCH_CHECK(false, "stitched: ", NameOf(op), " is not a binary op");
}

// The op applied over n elements; a row argument is a scalar broadcast along the tile. The op is a
// template parameter so that each loop is a plain (vectorizable) loop over arrays.
template <typename T, typename F>
void Map2(int64_t n, const T* a, bool a_full, const T* b, bool b_full, T* out, F f) {
  if (a_full && b_full) {
    for (int64_t i = 0; i < n; ++i) out[i] = f(a[i], b[i]);
  } else if (a_full) {
    const T y = *b;
    for (int64_t i = 0; i < n; ++i) out[i] = f(a[i], y);
  } else {
    const T x = *a;
    for (int64_t i = 0; i < n; ++i) out[i] = f(x, b[i]);
  }
}

template <typename T>
void BinaryTile(StitchOp op, int64_t n, const T* a, bool a_full, const T* b, bool b_full, T* out) {
  switch (op) {
    case StitchOp::Add: return Map2(n, a, a_full, b, b_full, out, [](T x, T y) { return x + y; });
    case StitchOp::Sub: return Map2(n, a, a_full, b, b_full, out, [](T x, T y) { return x - y; });
    case StitchOp::Mul: return Map2(n, a, a_full, b, b_full, out, [](T x, T y) { return x * y; });
    case StitchOp::Div: return Map2(n, a, a_full, b, b_full, out, [](T x, T y) { return x / y; });
    default: return Map2(n, a, a_full, b, b_full, out, [op](T x, T y) { return Binary(op, x, y); });
  }
}

// exp, log, tanh, erf, gelu, ... over a tile with ATen's vectorized CPU kernels (runtime-dispatched
// AVX2/AVX-512), called on the tile buffers: the same elementwise numerics as the unstitched ops,
// and far faster than scalar libm calls. False for the ops that plain loops do well.
template <typename T>
bool TranscendentalTile(StitchOp op, const T* x, T* out, int64_t n) {
  if (n < kVectorCallMin) return false;
  auto in = at::from_blob(const_cast<T*>(x), {n}, at::TensorOptions().dtype(c10::CppTypeToScalarType<T>::value));
  auto result = at::from_blob(out, {n}, in.options());
  switch (op) {
    case StitchOp::Exp: at::exp_out(result, in); return true;
    case StitchOp::Log: at::log_out(result, in); return true;
    case StitchOp::Sqrt: at::sqrt_out(result, in); return true;
    case StitchOp::Rsqrt: at::rsqrt_out(result, in); return true;
    case StitchOp::Tanh: at::tanh_out(result, in); return true;
    case StitchOp::Sigmoid: at::sigmoid_out(result, in); return true;
    case StitchOp::Erf: at::erf_out(result, in); return true;
    case StitchOp::Gelu: at::gelu_out(result, in, "none"); return true;
    case StitchOp::GeluTanh: at::gelu_out(result, in, "tanh"); return true;
    default: return false;
  }
}

// How one input's elements are found: a base offset per row, and per column either an affine
// stride (the column dims collapse to one) or a table of offsets.
struct InputAccess {
  std::vector<int64_t> row_offsets;
  int64_t col_stride = 0;
  bool affine = true;
  std::vector<int64_t> col_offsets;
};

InputAccess AccessOf(const StitchLayout& layout, const std::vector<int64_t>& strides) {
  InputAccess a;
  a.row_offsets.resize(layout.rows);
  for (int64_t r = 0; r < layout.rows; ++r) a.row_offsets[r] = RowOffset(layout, strides, r);
  // Collapsible when each column dim's stride is the next one's stride times its size (dims of size
  // 1 are skipped: their stride never matters).
  int64_t expected = -1;
  for (int d = static_cast<int>(layout.domain.size()) - 1; d >= layout.split && a.affine; --d) {
    if (layout.domain[d] == 1) continue;
    if (expected < 0) {
      a.col_stride = strides[d];
    } else if (strides[d] != expected) {
      a.affine = false;
    }
    expected = strides[d] * layout.domain[d];
  }
  if (!a.affine) {
    a.col_offsets.resize(layout.cols);
    for (int64_t c = 0; c < layout.cols; ++c) a.col_offsets[c] = ColOffset(layout, strides, c);
  }
  return a;
}

// Evaluates the program row by row; `scalar_t` is the tensors' dtype, `T` the arithmetic type.
template <typename scalar_t, typename T>
class RowEvaluator {
 public:
  RowEvaluator(const StitchProgram& program, const StitchLayout& layout, const std::vector<at::Tensor>& inputs,
               std::vector<at::Tensor>& outputs)
      : p_(program), layout_(layout), n_(static_cast<int>(program.statements.size())) {
    for (const at::Tensor& t : inputs) {
      in_data_.push_back(t.const_data_ptr<scalar_t>());
      access_.push_back(AccessOf(layout, layout.strides[in_data_.size() - 1]));
    }
    for (at::Tensor& t : outputs) out_data_.push_back(t.mutable_data_ptr<scalar_t>());
    if (!program.has_reductions()) {
      tile_ = std::min<int64_t>(std::max<int64_t>(layout.cols, 1), kElementwiseTile);
    } else {
      tile_ = layout.cols <= kWholeRowColumns ? std::max<int64_t>(layout.cols, 1) : kTileColumns;
    }
    // level[v]: reductions that must finish before v can be computed; a reduction of a value at
    // level L is accumulated in pass L and known from pass L + 1 on.
    level_.assign(n_, 0);
    passes_ = 1;
    for (int v = 0; v < n_; ++v) {
      const StitchStatement& s = p_.statements[v];
      for (int a : s.args) level_[v] = std::max(level_[v], level_[a]);
      if (IsReduction(s.op)) {
        passes_ = std::max(passes_, level_[v] + 1);
        level_[v] += 1;
      }
    }
    for (const StitchOutput& o : p_.outputs)
      if (!p_.is_row(o.value)) passes_ = std::max(passes_, level_[o.value] + 1);
    full_.resize(n_);
    for (int v = 0; v < n_; ++v) full_[v] = !p_.is_row(v);
  }

  int64_t tiles_per_row() const { return (layout_.cols + tile_ - 1) / tile_; }

  // Programs without reductions: tiles [begin, end) of the rows' tiles, each on its own.
  void RunTiles(int64_t begin, int64_t end) {
    std::vector<T> buffers(static_cast<size_t>(n_) * tile_);
    std::vector<T> row_values(n_);
    std::vector<char> row_known(n_), tile_known(n_);
    std::vector<const T*> input_views(n_, nullptr);
    const int64_t per_row = tiles_per_row();
    for (int64_t item = begin; item < end; ++item) {
      const int64_t r = item / per_row, c0 = (item % per_row) * tile_;
      const int64_t n = std::min(tile_, layout_.cols - c0);
      std::fill(row_known.begin(), row_known.end(), 0);
      std::fill(tile_known.begin(), tile_known.end(), 0);
      std::fill(input_views.begin(), input_views.end(), nullptr);
      Context ctx{r, c0, n, buffers.data(), input_views.data(), row_values.data(), row_known.data(),
                  tile_known.data()};
      for (size_t o = 0; o < p_.outputs.size(); ++o) {
        const int v = p_.outputs[o].value;
        if (!full_[v]) {
          if (c0 == 0) out_data_[o][r] = static_cast<scalar_t>(*Row(ctx, v));
          continue;
        }
        const T* x = Full(ctx, v);
        scalar_t* out = out_data_[o] + r * layout_.cols + c0;
        for (int64_t i = 0; i < n; ++i) out[i] = static_cast<scalar_t>(x[i]);
      }
    }
  }

  // Rows [begin, end) with buffers of this thread.
  void Run(int64_t begin, int64_t end) {
    std::vector<T> buffers(static_cast<size_t>(n_) * tile_);
    std::vector<T> row_values(n_);
    std::vector<double> sums(n_);
    std::vector<char> row_known(n_), tile_known(n_);
    std::vector<const T*> input_views(n_, nullptr);
    for (int64_t r = begin; r < end; ++r) {
      std::fill(row_known.begin(), row_known.end(), 0);
      std::fill(tile_known.begin(), tile_known.end(), 0);
      std::fill(input_views.begin(), input_views.end(), nullptr);
      for (int pass = 0; pass < passes_; ++pass) {
        for (int v = 0; v < n_; ++v) {  // this pass's reductions start from their identities
          const StitchOp op = p_.statements[v].op;
          if (!IsReduction(op) || level_[v] - 1 != pass) continue;
          if (op == StitchOp::RowMax) row_values[v] = -std::numeric_limits<T>::infinity();
          if (op == StitchOp::RowMin) row_values[v] = std::numeric_limits<T>::infinity();
          sums[v] = 0;
        }
        for (int64_t c0 = 0; c0 < layout_.cols; c0 += tile_) {
          const int64_t n = std::min(tile_, layout_.cols - c0);
          // A single tile keeps its values across passes; several tiles recompute them.
          if (tile_ < layout_.cols) std::fill(tile_known.begin(), tile_known.end(), 0);
          if (tile_ < layout_.cols) std::fill(input_views.begin(), input_views.end(), nullptr);
          Context ctx{r, c0, n, buffers.data(), input_views.data(), row_values.data(), row_known.data(),
                      tile_known.data()};
          for (int v = 0; v < n_; ++v) {
            const StitchStatement& s = p_.statements[v];
            if (!IsReduction(s.op) || level_[v] - 1 != pass) continue;
            const T* x = Full(ctx, s.args[0]);
            Accumulate(s.op, x, n, &row_values[v], &sums[v]);
          }
          if (pass == passes_ - 1) {
            for (size_t o = 0; o < p_.outputs.size(); ++o) {
              const int v = p_.outputs[o].value;
              if (!full_[v]) continue;
              const T* x = Full(ctx, v);
              scalar_t* out = out_data_[o] + r * layout_.cols + c0;
              for (int64_t i = 0; i < n; ++i) out[i] = static_cast<scalar_t>(x[i]);
            }
          }
        }
        for (int v = 0; v < n_; ++v) {
          const StitchStatement& s = p_.statements[v];
          if (!IsReduction(s.op) || level_[v] - 1 != pass) continue;
          if (s.op == StitchOp::RowSum) row_values[v] = static_cast<T>(sums[v]);
          if (s.op == StitchOp::RowMean) row_values[v] = static_cast<T>(sums[v] / static_cast<double>(layout_.cols));
          row_known[v] = 1;
        }
      }
      Context ctx{r, 0, 0, buffers.data(), input_views.data(), row_values.data(), row_known.data(), tile_known.data()};
      for (size_t o = 0; o < p_.outputs.size(); ++o) {
        const int v = p_.outputs[o].value;
        if (full_[v]) continue;
        out_data_[o][r] = static_cast<scalar_t>(*Row(ctx, v));
      }
    }
  }

 private:
  struct Context {
    int64_t row, col0, n;
    T* buffers;
    const T** input_views;  // per value: inputs read in place (else null: the value is in its buffer)
    T* row_values;
    char* row_known;
    char* tile_known;
  };

  // Reductions over a tile in 16 independent lanes, so that the loops vectorize; lane sums are
  // combined in double.
  static void Accumulate(StitchOp op, const T* x, int64_t n, T* value, double* sum) {
    constexpr int kLanes = 16;
    const int64_t body = n - n % kLanes;
    if (op == StitchOp::RowSum || op == StitchOp::RowMean) {
      T lanes[kLanes] = {};
      for (int64_t i = 0; i < body; i += kLanes)
        for (int j = 0; j < kLanes; ++j) lanes[j] += x[i + j];
      double s = 0;
      for (int j = 0; j < kLanes; ++j) s += static_cast<double>(lanes[j]);
      for (int64_t i = body; i < n; ++i) s += static_cast<double>(x[i]);
      *sum += s;
      return;
    }
    const bool is_max = op == StitchOp::RowMax;
    T lanes[kLanes];
    for (int j = 0; j < kLanes; ++j) lanes[j] = *value;
    bool nan = *value != *value;
    for (int64_t i = 0; i < body; i += kLanes) {
      for (int j = 0; j < kLanes; ++j) {
        const T y = x[i + j];
        nan |= y != y;
        lanes[j] = is_max ? (lanes[j] > y ? lanes[j] : y) : (lanes[j] < y ? lanes[j] : y);
      }
    }
    T m = *value;
    for (int j = 0; j < kLanes; ++j) m = is_max ? std::max(m, lanes[j]) : std::min(m, lanes[j]);
    for (int64_t i = body; i < n; ++i) {
      nan |= x[i] != x[i];
      m = is_max ? std::max(m, x[i]) : std::min(m, x[i]);
    }
    // torch's max/min reductions propagate NaN
    *value = nan ? std::numeric_limits<T>::quiet_NaN() : m;
  }

  // A row value (computed once per row; reductions are filled in by Run).
  const T* Row(Context& ctx, int v) {
    if (ctx.row_known[v]) return &ctx.row_values[v];
    const StitchStatement& s = p_.statements[v];
    TORCH_CHECK(!IsReduction(s.op), "stitched: reduction ", v, " read before its pass (internal error)");
    T result;
    if (s.op == StitchOp::Constant) {
      result = static_cast<T>(s.constant);
    } else if (s.args.size() == 1) {
      result = Unary(s.op, *Row(ctx, s.args[0]));
    } else {
      result = Binary(s.op, *Row(ctx, s.args[0]), *Row(ctx, s.args[1]));
    }
    ctx.row_values[v] = result;
    ctx.row_known[v] = 1;
    return &ctx.row_values[v];
  }

  // Pointer to v over the current tile: a buffer for a full value, the scalar for a row value.
  const T* Any(Context& ctx, int v) { return full_[v] ? Full(ctx, v) : Row(ctx, v); }

  const T* Full(Context& ctx, int v) {
    T* out = ctx.buffers + static_cast<int64_t>(v) * tile_;
    if (ctx.tile_known[v]) return ctx.input_views[v] ? ctx.input_views[v] : out;
    const StitchStatement& s = p_.statements[v];
    const int64_t n = ctx.n;
    if (s.op == StitchOp::Input) {
      const scalar_t* base = in_data_[s.input];
      const InputAccess& a = access_[s.input];
      const int64_t row = a.row_offsets[ctx.row];
      if constexpr (std::is_same_v<scalar_t, T>) {
        if (a.affine && a.col_stride == 1) {
          // Contiguous columns of the arithmetic type: read in place, no copy.
          ctx.tile_known[v] = 1;
          return ctx.input_views[v] = base + row + ctx.col0;
        }
      }
      if (a.affine && a.col_stride == 1) {
        const scalar_t* x = base + row + ctx.col0;
        for (int64_t i = 0; i < n; ++i) out[i] = static_cast<T>(x[i]);
      } else if (a.affine) {
        const scalar_t* x = base + row + ctx.col0 * a.col_stride;
        for (int64_t i = 0; i < n; ++i) out[i] = static_cast<T>(x[i * a.col_stride]);
      } else {
        const int64_t* cols = a.col_offsets.data() + ctx.col0;
        for (int64_t i = 0; i < n; ++i) out[i] = static_cast<T>(base[row + cols[i]]);
      }
    } else if (s.args.size() == 1) {
      const T* x = Full(ctx, s.args[0]);  // a unary op is full only if its argument is
      const StitchOp op = s.op;
      if (TranscendentalTile(op, x, out, n)) {
        // ATen's vectorized kernel over the tile
      } else if (op == StitchOp::Neg) {
        for (int64_t i = 0; i < n; ++i) out[i] = -x[i];
      } else if (op == StitchOp::Relu) {
        for (int64_t i = 0; i < n; ++i) out[i] = x[i] < T(0) ? T(0) : x[i];
      } else {
        for (int64_t i = 0; i < n; ++i) out[i] = Unary(op, x[i]);
      }
    } else {
      const int a = s.args[0], b = s.args[1];
      BinaryTile(s.op, n, Any(ctx, a), full_[a], Any(ctx, b), full_[b], out);
    }
    ctx.tile_known[v] = 1;
    return out;
  }

  const StitchProgram& p_;
  const StitchLayout& layout_;
  const int n_;
  int64_t tile_ = 1;
  int passes_ = 1;
  std::vector<int> level_;
  std::vector<bool> full_;
  std::vector<const scalar_t*> in_data_;
  std::vector<InputAccess> access_;
  std::vector<scalar_t*> out_data_;
};

}  // namespace

void RunStitchedCpu(const StitchProgram& program, const StitchLayout& layout, const std::vector<at::Tensor>& inputs,
                    std::vector<at::Tensor>& outputs) {
  if (layout.rows == 0 || layout.cols == 0) {
    // Empty domain: full outputs are empty; row outputs of an empty reduction are its identity.
    for (size_t o = 0; o < program.outputs.size(); ++o) {
      const StitchStatement& s = program.statements[program.outputs[o].value];
      if (!program.is_row(program.outputs[o].value) || outputs[o].numel() == 0) continue;
      TORCH_CHECK(s.op == StitchOp::RowSum, "stitched: ", NameOf(s.op),
                  " of an empty row is undefined (the rows have 0 columns)");
      outputs[o].zero_();
    }
    return;
  }
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, layout.dtype, "stitched_cpu", [&] {
    using T = at::opmath_type<scalar_t>;
    RowEvaluator<scalar_t, T> evaluator(program, layout, inputs, outputs);
    if (!program.has_reductions()) {
      const int64_t items = layout.rows * evaluator.tiles_per_row();
      const int64_t grain = std::max<int64_t>(1, 32768 / std::min<int64_t>(layout.cols, kElementwiseTile));
      at::parallel_for(0, items, grain, [&](int64_t begin, int64_t end) { evaluator.RunTiles(begin, end); });
      return;
    }
    const int64_t grain = std::max<int64_t>(1, 32768 / std::max<int64_t>(layout.cols, 1));
    at::parallel_for(0, layout.rows, grain, [&](int64_t begin, int64_t end) { evaluator.Run(begin, end); });
  });
}

}  // namespace autograph
