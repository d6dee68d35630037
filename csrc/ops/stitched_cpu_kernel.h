#pragma once
// autograph::stitched on the CPU, the kernel itself. Included by one source file per CPU capability
// (stitched_cpu_default.cpp, stitched_cpu_avx2.cpp), each compiled with its own instruction set and
// CPU_CAPABILITY, as ATen builds its own CPU kernels; stitched_cpu.cpp picks the one ATen uses.
//
// Rows run in parallel; within a row the columns go in tiles that stay in cache. Each full value of
// the program is a tile-sized buffer, each row value a scalar, so every input element is loaded
// from memory once and every output element stored once. When a row has more columns than one tile
// holds, the passes that follow a reduction recompute the full values they need from the inputs
// (the inputs are read once per reduction level, from cache when the row fits it), as a GPU kernel
// does with rows longer than its registers hold. Every loop over a tile runs on ATen's Vectorized<T>,
// with the vector forms of the functions that ATen's own elementwise kernels use (Sleef's exp, tanh,
// erf, ...), so a stitched group computes what the unstitched operators compute, at their speed.
#include <ATen/Dispatch.h>
#include <ATen/OpMathType.h>
#include <ATen/Parallel.h>
#include <ATen/cpu/vec/functional.h>
#include <ATen/cpu/vec/vec.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <type_traits>

#include "ops/stitched_kernels.h"

#ifndef CPU_CAPABILITY
#error "stitched_cpu_kernel.h is built once per capability: define CPU_CAPABILITY (DEFAULT, AVX2)"
#endif

namespace autograph {
namespace CPU_CAPABILITY {

using at::vec::Vectorized;

constexpr int64_t kWholeRowColumns = 8192;  // rows up to this many columns are evaluated in one tile
constexpr int64_t kTileColumns = 2048;
// No reductions: tiles are independent work items of about this many elements (each value's tile
// buffer stays in L1/L2); rows shorter than it are packed, whole, several to a tile.
constexpr int64_t kElementwiseTile = 2048;

template <typename T>
T GeluScalar(T x) {
  return T(0.5) * x * (T(1) + std::erf(x * T(M_SQRT1_2)));
}

template <typename T>
T GeluTanhScalar(T x) {
  const T k = T(0.7978845608028654);  // sqrt(2 / pi)
  return T(0.5) * x * (T(1) + std::tanh(k * (x + T(0.044715) * x * x * x)));
}

// Scalar forms, for row values (one per row).
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
    case StitchOp::Gelu: return GeluScalar(x);
    case StitchOp::GeluTanh: return GeluTanhScalar(x);
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

// f over n elements, a vector at a time; the tail is a partial vector (its unused lanes are zeros,
// whose results are never stored), so every element sees the same vector code.
template <typename T, typename F>
void Map1(int64_t n, const T* x, T* out, F f) {
  using Vec = Vectorized<T>;
  int64_t i = 0;
  for (; i + Vec::size() <= n; i += Vec::size()) f(Vec::loadu(x + i)).store(out + i);
  if (i < n) f(Vec::loadu(x + i, n - i)).store(out + i, static_cast<int>(n - i));
}

// f over n elements of a and b; an argument that is a row value is one scalar, broadcast.
template <typename T, typename F>
void Map2(int64_t n, const T* a, bool a_full, const T* b, bool b_full, T* out, F f) {
  using Vec = Vectorized<T>;
  const Vec a_row(a_full ? T(0) : *a), b_row(b_full ? T(0) : *b);
  int64_t i = 0;
  for (; i + Vec::size() <= n; i += Vec::size())
    f(a_full ? Vec::loadu(a + i) : a_row, b_full ? Vec::loadu(b + i) : b_row).store(out + i);
  if (i < n) {
    const int rest = static_cast<int>(n - i);
    f(a_full ? Vec::loadu(a + i, rest) : a_row, b_full ? Vec::loadu(b + i, rest) : b_row).store(out + i, rest);
  }
}

// The vector form of a unary op over a tile: the formulas of ATen's CPU kernels for these ops.
template <typename T>
void UnaryTile(StitchOp op, int64_t n, const T* x, T* out) {
  using Vec = Vectorized<T>;
  switch (op) {
    case StitchOp::Neg: return Map1(n, x, out, [](Vec v) { return v.neg(); });
    case StitchOp::Exp: return Map1(n, x, out, [](Vec v) { return v.exp(); });
    case StitchOp::Log: return Map1(n, x, out, [](Vec v) { return v.log(); });
    case StitchOp::Sqrt: return Map1(n, x, out, [](Vec v) { return v.sqrt(); });
    case StitchOp::Rsqrt: return Map1(n, x, out, [](Vec v) { return v.rsqrt(); });
    case StitchOp::Tanh: return Map1(n, x, out, [](Vec v) { return v.tanh(); });
    case StitchOp::Sigmoid: return Map1(n, x, out, [](Vec v) { return (Vec(T(1)) + v.neg().exp()).reciprocal(); });
    case StitchOp::Relu: return Map1(n, x, out, [](Vec v) { return at::vec::clamp_min(v, Vec(T(0))); });
    case StitchOp::Gelu:
      return Map1(n, x, out, [](Vec v) { return v * Vec(T(0.5)) * (Vec(T(1)) + (v * Vec(T(M_SQRT1_2))).erf()); });
    case StitchOp::GeluTanh:
      return Map1(n, x, out, [](Vec v) {
        const Vec inner = Vec(T(0.7978845608028654)) * (v + Vec(T(0.044715)) * v * v * v);
        return Vec(T(0.5)) * v * (Vec(T(1)) + inner.tanh());
      });
    case StitchOp::Abs: return Map1(n, x, out, [](Vec v) { return v.abs(); });
    case StitchOp::Reciprocal: return Map1(n, x, out, [](Vec v) { return v.reciprocal(); });
    case StitchOp::Erf: return Map1(n, x, out, [](Vec v) { return v.erf(); });
    default: break;
  }
  TORCH_CHECK(false, "stitched: ", NameOf(op), " is not a unary op");
}

template <typename T>
void BinaryTile(StitchOp op, int64_t n, const T* a, bool a_full, const T* b, bool b_full, T* out) {
  using Vec = Vectorized<T>;
  switch (op) {
    case StitchOp::Add: return Map2(n, a, a_full, b, b_full, out, [](Vec x, Vec y) { return x + y; });
    case StitchOp::Sub: return Map2(n, a, a_full, b, b_full, out, [](Vec x, Vec y) { return x - y; });
    case StitchOp::Mul: return Map2(n, a, a_full, b, b_full, out, [](Vec x, Vec y) { return x * y; });
    case StitchOp::Div: return Map2(n, a, a_full, b, b_full, out, [](Vec x, Vec y) { return x / y; });
    case StitchOp::Max: return Map2(n, a, a_full, b, b_full, out, [](Vec x, Vec y) { return at::vec::maximum(x, y); });
    case StitchOp::Min: return Map2(n, a, a_full, b, b_full, out, [](Vec x, Vec y) { return at::vec::minimum(x, y); });
    case StitchOp::Pow: return Map2(n, a, a_full, b, b_full, out, [](Vec x, Vec y) { return x.pow(y); });
    default: break;
  }
  TORCH_CHECK(false, "stitched: ", NameOf(op), " is not a binary op");
}

// How one input's elements are found: a base offset per row, and per column either an affine
// stride (the column dims collapse to one) or a table of offsets.
struct InputAccess {
  std::vector<int64_t> row_offsets;
  int64_t col_stride = 0;
  bool affine = true;
  std::vector<int64_t> col_offsets;
  bool rows_adjacent = false;  // affine, column stride 1, and each row starts where the last ended
};

InputAccess AccessOf(const StitchLayout& layout, const std::vector<int64_t>& strides) {
  InputAccess a;
  // Row offsets by a mixed-radix counter over the row dims (no division per row).
  a.row_offsets.resize(layout.rows);
  std::vector<int64_t> index(layout.split, 0);
  int64_t offset = 0;
  for (int64_t r = 0; r < layout.rows; ++r) {
    a.row_offsets[r] = offset;
    for (int d = layout.split - 1; d >= 0; --d) {
      if (++index[d] < layout.domain[d]) {
        offset += strides[d];
        break;
      }
      offset -= (layout.domain[d] - 1) * strides[d];
      index[d] = 0;
    }
  }
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
  if (a.affine && a.col_stride == 1) {
    a.rows_adjacent = true;
    for (int64_t r = 1; r < layout.rows && a.rows_adjacent; ++r)
      a.rows_adjacent = a.row_offsets[r] == a.row_offsets[r - 1] + layout.cols;
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
      tile_ = kElementwiseTile;
      const int64_t k = rows_per_tile();
      stride_ = k > 1 ? k * layout.cols : std::min(tile_, std::max<int64_t>(layout.cols, 1));
    } else {
      tile_ = layout.cols <= kWholeRowColumns ? std::max<int64_t>(layout.cols, 1) : kTileColumns;
      stride_ = tile_;
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
    reductions_of_pass_.resize(passes_);
    for (int v = 0; v < n_; ++v)
      if (IsReduction(p_.statements[v].op)) reductions_of_pass_[level_[v] - 1].push_back(v);
    // full_[v]: v varies along a row. Besides the program's row values (reductions and what follows
    // from them and constants), an input broadcast along the columns (a per-channel scale of NCHW)
    // is one scalar per row: read once per row, not gathered into a tile.
    full_.resize(n_);
    for (int v = 0; v < n_; ++v) {
      const StitchStatement& s = p_.statements[v];
      if (s.op == StitchOp::Input) {
        const InputAccess& a = access_[s.input];
        full_[v] = layout.cols > 1 && !(a.affine && a.col_stride == 0);
      } else if (s.op == StitchOp::Constant || IsReduction(s.op)) {
        full_[v] = false;
      } else {
        full_[v] = std::any_of(s.args.begin(), s.args.end(), [&](int a) { return static_cast<bool>(full_[a]); });
      }
    }
    output_full_.resize(p_.outputs.size());
    for (size_t o = 0; o < p_.outputs.size(); ++o) output_full_[o] = !p_.is_row(p_.outputs[o].value);
  }

  // Programs without reductions: work items are tiles of up to kElementwiseTile elements, either
  // part of one long row or several whole short rows (a 7x7 feature map is 49 elements a row).
  int64_t tiles_per_row() const { return (layout_.cols + tile_ - 1) / tile_; }
  int64_t rows_per_tile() const { return layout_.cols >= tile_ ? 1 : std::max<int64_t>(1, tile_ / layout_.cols); }
  int64_t work_items() const {
    const int64_t k = rows_per_tile();
    return k > 1 ? (layout_.rows + k - 1) / k : layout_.rows * tiles_per_row();
  }

  // Work items [begin, end) of a program without reductions.
  void RunTiles(int64_t begin, int64_t end) {
    // Uninitialized: every element is written before it is read, and zeroing n_ tiles per call
    // would cost more than a small group's whole work.
    std::unique_ptr<T[]> buffers(new T[static_cast<size_t>(n_) * stride_]);
    std::vector<T> row_values(n_);
    std::vector<char> row_known(n_), tile_known(n_);
    std::vector<const T*> input_views(n_, nullptr);
    const int64_t per_row = tiles_per_row(), k = rows_per_tile();
    for (int64_t item = begin; item < end; ++item) {
      Context ctx{0, 0, 0, 1, buffers.get(), input_views.data(), row_values.data(), row_known.data(),
                  tile_known.data()};
      if (k > 1) {
        ctx.row = item * k;
        ctx.rows = std::min(k, layout_.rows - ctx.row);
        ctx.n = layout_.cols;
      } else {
        ctx.row = item / per_row;
        ctx.col0 = (item % per_row) * tile_;
        ctx.n = std::min(tile_, layout_.cols - ctx.col0);
      }
      ctx.known_row = -1;
      std::fill(tile_known.begin(), tile_known.end(), 0);
      for (size_t o = 0; o < p_.outputs.size(); ++o) {
        const int v = p_.outputs[o].value;
        if (!output_full_[o]) {  // a row output (of constants): one value per row
          if (ctx.col0 != 0) continue;
          for (int64_t j = 0; j < ctx.rows; ++j) out_data_[o][ctx.row + j] = static_cast<scalar_t>(*RowAt(ctx, ctx.row + j, v));
          continue;
        }
        scalar_t* out = out_data_[o] + ctx.row * layout_.cols + ctx.col0;
        const T* x = Full(ctx, v, out);
        if (x != reinterpret_cast<const T*>(out)) Store(x, ctx.rows * ctx.n, out);
      }
    }
  }

  // Rows [begin, end) with buffers of this thread.
  void Run(int64_t begin, int64_t end) {
    // Uninitialized: every element is written before it is read, and zeroing n_ tiles per call
    // would cost more than a small group's whole work.
    std::unique_ptr<T[]> buffers(new T[static_cast<size_t>(n_) * stride_]);
    std::vector<T> row_values(n_);
    std::vector<double> sums(n_);
    std::vector<char> row_known(n_), tile_known(n_);
    std::vector<const T*> input_views(n_, nullptr);
    for (int64_t r = begin; r < end; ++r) {
      std::fill(row_known.begin(), row_known.end(), 0);
      std::fill(tile_known.begin(), tile_known.end(), 0);
      for (int pass = 0; pass < passes_; ++pass) {
        const std::vector<int>& reductions = reductions_of_pass_[pass];
        for (int v : reductions) {  // this pass's reductions start from their identities
          const StitchOp op = p_.statements[v].op;
          if (op == StitchOp::RowMax) row_values[v] = -std::numeric_limits<T>::infinity();
          if (op == StitchOp::RowMin) row_values[v] = std::numeric_limits<T>::infinity();
          sums[v] = 0;
        }
        for (int64_t c0 = 0; c0 < layout_.cols; c0 += tile_) {
          const int64_t n = std::min(tile_, layout_.cols - c0);
          // A single tile keeps its values across passes; several tiles recompute them.
          if (tile_ < layout_.cols) std::fill(tile_known.begin(), tile_known.end(), 0);
          Context ctx{r, c0, n, 1, buffers.get(), input_views.data(), row_values.data(), row_known.data(),
                      tile_known.data(), r};
          for (int v : reductions)
            Accumulate(p_.statements[v].op, Full(ctx, p_.statements[v].args[0]), n, &row_values[v], &sums[v]);
          if (pass == passes_ - 1) {
            for (size_t o = 0; o < p_.outputs.size(); ++o)
              if (output_full_[o]) Store(Full(ctx, p_.outputs[o].value), n, out_data_[o] + r * layout_.cols + c0);
          }
        }
        for (int v : reductions) {
          const StitchOp op = p_.statements[v].op;
          if (op == StitchOp::RowSum) row_values[v] = static_cast<T>(sums[v]);
          if (op == StitchOp::RowMean) row_values[v] = static_cast<T>(sums[v] / static_cast<double>(layout_.cols));
          row_known[v] = 1;
        }
      }
      Context ctx{r, 0, 0, 1, buffers.get(), input_views.data(), row_values.data(), row_known.data(),
                  tile_known.data(), r};
      for (size_t o = 0; o < p_.outputs.size(); ++o)
        if (!output_full_[o]) out_data_[o][r] = static_cast<scalar_t>(*Row(ctx, r, p_.outputs[o].value));
    }
  }

 private:
  // The tile: rows [row, row + rows), columns [col0, col0 + n) of each (rows > 1 only with whole
  // rows, n = cols), its values held row after row in a buffer of rows * n elements.
  struct Context {
    int64_t row, col0, n, rows;
    T* buffers;
    const T** input_views;  // per value: where the tile is when not in its buffer (an input read in
                            // place, an output computed in place), else null
    T* row_values;          // row values of row known_row
    char* row_known;
    char* tile_known;
    int64_t known_row = -1;
  };

  static void Store(const T* x, int64_t n, scalar_t* out) {
    if constexpr (std::is_same_v<scalar_t, T>) {
      if (x != out) std::copy(x, x + n, out);
    } else {
      for (int64_t i = 0; i < n; ++i) out[i] = static_cast<scalar_t>(x[i]);
    }
  }

  // Reductions over a tile in two vectors of independent lanes; lane sums are combined in double.
  static void Accumulate(StitchOp op, const T* x, int64_t n, T* value, double* sum) {
    using Vec = Vectorized<T>;
    constexpr int64_t kStep = 2 * Vec::size();
    const int64_t body = n - n % kStep;
    T lanes[kStep];
    if (op == StitchOp::RowSum || op == StitchOp::RowMean) {
      Vec s0(T(0)), s1(T(0));
      for (int64_t i = 0; i < body; i += kStep) {
        s0 = s0 + Vec::loadu(x + i);
        s1 = s1 + Vec::loadu(x + i + Vec::size());
      }
      s0.store(lanes);
      s1.store(lanes + Vec::size());
      double s = 0;
      for (int64_t j = 0; j < kStep; ++j) s += static_cast<double>(lanes[j]);
      for (int64_t i = body; i < n; ++i) s += static_cast<double>(x[i]);
      *sum += s;
      return;
    }
    // max / min: at::vec::maximum / minimum propagate NaN, as torch's reductions do.
    const bool is_max = op == StitchOp::RowMax;
    Vec m0(*value), m1(*value);
    for (int64_t i = 0; i < body; i += kStep) {
      const Vec a = Vec::loadu(x + i), b = Vec::loadu(x + i + Vec::size());
      m0 = is_max ? at::vec::maximum(m0, a) : at::vec::minimum(m0, a);
      m1 = is_max ? at::vec::maximum(m1, b) : at::vec::minimum(m1, b);
    }
    m0.store(lanes);
    m1.store(lanes + Vec::size());
    T m = *value;
    bool nan = m != m;
    auto take = [&](T y) {
      nan |= y != y;
      m = is_max ? std::max(m, y) : std::min(m, y);
    };
    for (int64_t j = 0; j < kStep; ++j) take(lanes[j]);
    for (int64_t i = body; i < n; ++i) take(x[i]);
    *value = nan ? std::numeric_limits<T>::quiet_NaN() : m;
  }

  // A row value of row r (computed once per row; reductions are filled in by Run, whose rows are
  // one at a time).
  const T* RowAt(Context& ctx, int64_t r, int v) {
    if (r != ctx.known_row) {
      std::fill(ctx.row_known, ctx.row_known + n_, 0);
      ctx.known_row = r;
    }
    return Row(ctx, r, v);
  }

  const T* Row(Context& ctx, int64_t r, int v) {
    if (ctx.row_known[v]) return &ctx.row_values[v];
    const StitchStatement& s = p_.statements[v];
    TORCH_CHECK(!IsReduction(s.op), "stitched: reduction ", v, " read before its pass (internal error)");
    T result;
    if (s.op == StitchOp::Constant) {
      result = static_cast<T>(s.constant);
    } else if (s.op == StitchOp::Input) {  // broadcast along the columns
      result = static_cast<T>(in_data_[s.input][access_[s.input].row_offsets[r]]);
    } else if (s.args.size() == 1) {
      result = Unary(s.op, *Row(ctx, r, s.args[0]));
    } else {
      result = Binary(s.op, *Row(ctx, r, s.args[0]), *Row(ctx, r, s.args[1]));
    }
    ctx.row_values[v] = result;
    ctx.row_known[v] = 1;
    return &ctx.row_values[v];
  }

  // v over the current tile; a row value is broadcast into its buffer (a full output, a reduction's
  // argument, or an operand in a tile of several rows may be one). `dest`, when given, is where an
  // output's tile goes: a value computed there is not copied again.
  const T* Full(Context& ctx, int v, scalar_t* dest = nullptr) {
    T* out = ctx.buffers + static_cast<int64_t>(v) * stride_;
    if (ctx.tile_known[v]) return ctx.input_views[v] ? ctx.input_views[v] : out;
    ctx.input_views[v] = nullptr;
    const StitchStatement& s = p_.statements[v];
    const int64_t n = ctx.n, m = ctx.rows * ctx.n;
    if constexpr (std::is_same_v<scalar_t, T>) {
      if (dest && full_[v] && s.op != StitchOp::Input) ctx.input_views[v] = out = dest;
    }
    if (!full_[v] && s.op == StitchOp::Input) {  // broadcast along the columns: one element a row
      const scalar_t* base = in_data_[s.input];
      const int64_t* rows = access_[s.input].row_offsets.data() + ctx.row;
      for (int64_t j = 0; j < ctx.rows; ++j) std::fill(out + j * n, out + (j + 1) * n, static_cast<T>(base[rows[j]]));
    } else if (!full_[v]) {
      for (int64_t j = 0; j < ctx.rows; ++j) std::fill(out + j * n, out + (j + 1) * n, *RowAt(ctx, ctx.row + j, v));
    } else if (s.op == StitchOp::Input) {
      const scalar_t* base = in_data_[s.input];
      const InputAccess& a = access_[s.input];
      if constexpr (std::is_same_v<scalar_t, T>) {
        // Columns, and in a tile of several rows the rows too, adjacent: read in place, no copy.
        if (a.affine && a.col_stride == 1 && (ctx.rows == 1 || a.rows_adjacent)) {
          ctx.tile_known[v] = 1;
          return ctx.input_views[v] = base + a.row_offsets[ctx.row] + ctx.col0;
        }
      }
      for (int64_t j = 0; j < ctx.rows; ++j) {
        const int64_t row = a.row_offsets[ctx.row + j];
        T* o = out + j * n;
        if (a.affine && a.col_stride == 1) {
          const scalar_t* x = base + row + ctx.col0;
          for (int64_t i = 0; i < n; ++i) o[i] = static_cast<T>(x[i]);
        } else if (a.affine) {
          const scalar_t* x = base + row + ctx.col0 * a.col_stride;
          for (int64_t i = 0; i < n; ++i) o[i] = static_cast<T>(x[i * a.col_stride]);
        } else {
          const int64_t* cols = a.col_offsets.data() + ctx.col0;
          for (int64_t i = 0; i < n; ++i) o[i] = static_cast<T>(base[row + cols[i]]);
        }
      }
    } else if (s.args.size() == 1) {
      UnaryTile(s.op, m, Full(ctx, s.args[0]), out);  // a unary op is full only if its argument is
    } else {
      // A row operand is one broadcast scalar in a one-row tile, a broadcast buffer in a taller one.
      const int a = s.args[0], b = s.args[1];
      const bool a_full = full_[a] || ctx.rows > 1, b_full = full_[b] || ctx.rows > 1;
      BinaryTile(s.op, m, a_full ? Full(ctx, a) : RowAt(ctx, ctx.row, a), a_full,
                 b_full ? Full(ctx, b) : RowAt(ctx, ctx.row, b), b_full, out);
    }
    ctx.tile_known[v] = 1;
    return out;
  }

  const StitchProgram& p_;
  const StitchLayout& layout_;
  const int n_;
  int64_t tile_ = 1;
  int64_t stride_ = 1;  // elements of each value's buffer: the largest tile this domain has
  int passes_ = 1;
  std::vector<int> level_;
  std::vector<std::vector<int>> reductions_of_pass_;  // the reductions accumulated in each pass
  std::vector<char> full_;
  std::vector<char> output_full_;
  std::vector<const scalar_t*> in_data_;
  std::vector<InputAccess> access_;
  std::vector<scalar_t*> out_data_;
};

// The program over a non-empty domain (RunStitchedCpu handles the empty one). Defined, not inline:
// the one source file of each capability that includes this header exports it.
void RunStitchedCpuKernel(const StitchProgram& program, const StitchLayout& layout,
                                 const std::vector<at::Tensor>& inputs, std::vector<at::Tensor>& outputs) {
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, layout.dtype, "stitched_cpu", [&] {
    using T = at::opmath_type<scalar_t>;
    RowEvaluator<scalar_t, T> evaluator(program, layout, inputs, outputs);
    if (!program.has_reductions()) {
      // ATen's grain: no thread gets fewer than 32768 elements.
      const int64_t grain = std::max<int64_t>(1, 32768 / kElementwiseTile);
      at::parallel_for(0, evaluator.work_items(), grain, [&](int64_t begin, int64_t end) { evaluator.RunTiles(begin, end); });
      return;
    }
    const int64_t grain = std::max<int64_t>(1, 32768 / std::max<int64_t>(layout.cols, 1));
    at::parallel_for(0, layout.rows, grain, [&](int64_t begin, int64_t end) { evaluator.Run(begin, end); });
  });
}

}  // namespace CPU_CAPABILITY
}  // namespace autograph
