#include "stitch/stitch_cuda_source.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>

#include "autograph/error.h"

namespace autograph {

namespace {

constexpr unsigned kMaxGrid = 1u << 20;  // grid-stride loops cover the rest

// ---- specialization facts ------------------------------------------------------------------------

int64_t NextPowerOfTwo(int64_t v) {
  int64_t p = 1;
  while (p < v) p *= 2;
  return p;
}

int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

// T: threads per row, a power of two. Short rows share a warp; rows up to 32 * kStitchMaxRegisterElements
// take a warp; longer rows take a block sized so that each thread holds at most kStitchMaxRegisterElements.
int ThreadsPerRow(int64_t cols) {
  if (cols <= 32) return static_cast<int>(NextPowerOfTwo(std::max<int64_t>(cols, 1)));
  if (cols <= 32 * kStitchMaxRegisterElements) return 32;
  return static_cast<int>(
      std::min<int64_t>(NextPowerOfTwo(CeilDiv(cols, kStitchMaxRegisterElements)), kStitchMaxThreadsPerRow));
}

// One dim of the iteration space after coalescing, with each input's element stride along it.
struct LoopDim {
  int64_t size = 1;
  std::vector<int64_t> strides;
};

// Domain dims [begin, end) without size-1 dims, neighbours merged where every input walks them as one
// (outer stride == inner stride * inner size; broadcast 0/0 qualifies), outermost first.
std::vector<LoopDim> CoalesceDims(const StitchCudaSpec& spec, int begin, int end) {
  std::vector<LoopDim> dims;
  for (int d = begin; d < end; ++d) {
    if (spec.domain[d] == 1) continue;
    LoopDim dim;
    dim.size = spec.domain[d];
    for (const auto& s : spec.strides) dim.strides.push_back(s[d]);
    if (!dims.empty()) {
      LoopDim& outer = dims.back();
      bool merge = true;
      for (size_t i = 0; i < dim.strides.size(); ++i) merge = merge && outer.strides[i] == dim.strides[i] * dim.size;
      if (merge) {
        outer.size *= dim.size;
        outer.strides = dim.strides;
        continue;
      }
    }
    dims.push_back(std::move(dim));
  }
  return dims;
}

struct ValueInfo {
  bool full = false;
  int depth = 0;  // how many reductions in sequence it waits for
};

std::vector<ValueInfo> AnalyzeValues(const StitchProgram& program) {
  std::vector<ValueInfo> info(program.statements.size());
  for (size_t v = 0; v < program.statements.size(); ++v) {
    const StitchStatement& s = program.statements[v];
    if (s.op == StitchOp::Input) {
      info[v].full = true;
    } else if (IsReduction(s.op)) {
      info[v].depth = info[s.args[0]].depth + 1;
    } else {
      for (int a : s.args) {
        info[v].full = info[v].full || info[a].full;
        info[v].depth = std::max(info[v].depth, info[a].depth);
      }
    }
  }
  return info;
}

// Full values that `targets` (full values) need, transitively through full arguments; row arguments
// are scalars computed earlier.
std::vector<bool> FullClosure(const StitchProgram& program, const std::vector<ValueInfo>& info,
                              const std::vector<int>& targets) {
  std::vector<bool> needed(program.statements.size(), false);
  for (int t : targets) needed[t] = true;
  for (int v = static_cast<int>(program.statements.size()) - 1; v >= 0; --v) {
    if (!needed[v]) continue;
    for (int a : program.statements[v].args)
      if (info[a].full) needed[a] = true;
  }
  return needed;
}

// ---- text helpers --------------------------------------------------------------------------------

struct Types {
  std::string storage;  // element type of the kernel's pointers
  std::string compute;  // "float" or "double"
  bool is_double = false;
};

Types TypesOf(const std::string& dtype) {
  if (dtype == "float") return {"float", "float", false};
  if (dtype == "double") return {"double", "double", true};
  // Bit patterns: NVRTC has no built-in cuda_fp16.h / cuda_bf16.h, so conversions are written out.
  if (dtype == "__half" || dtype == "__nv_bfloat16") return {"unsigned short", "float", false};
  throw Error("stitched (CUDA): unsupported dtype '" + dtype + "' (float, double, __half, __nv_bfloat16)");
}

class SourceWriter {
 public:
  void Line(const std::string& text) { out_ << std::string(2 * indent_, ' ') << text << '\n'; }
  void Open(const std::string& text) {
    Line(text + " {");
    ++indent_;
  }
  void Close(const std::string& suffix = "") {
    --indent_;
    Line("}" + suffix);
  }
  std::string str() const { return out_.str(); }

 private:
  std::ostringstream out_;
  int indent_ = 0;
};

class KernelGenerator {
 public:
  KernelGenerator(const StitchProgram& program, const StitchCudaSpec& spec)
      : program_(program), spec_(spec), types_(TypesOf(spec.dtype)), info_(AnalyzeValues(program)) {}

  StitchCudaKernel Generate();

 private:
  // Literals.
  std::string Lit(double v) const;
  std::string Index(int64_t v) const { return std::to_string(v) + (index64_ ? "ull" : "u"); }
  std::string Fn(const char* float_name, const char* double_name) const {
    return types_.is_double ? double_name : float_name;
  }

  // Value expressions. Ref names a value at the current element: "v3" (row value, or full value in
  // a streaming pass) or "v3[e]" (full value held in registers).
  std::string Ref(int v) const {
    return info_[v].full && registers_ ? "v" + std::to_string(v) + "[e]" : "v" + std::to_string(v);
  }
  std::string Expression(int v, const std::vector<std::string>& input_offsets, const std::string& guard) const;
  std::string Unary(StitchOp op, const std::string& x) const;
  std::string Binary(int v, const std::string& a, const std::string& b) const;

  // Index math: emits digits of `index` over `dims` (outermost first) named prefix0.., returns
  // per-input offset expressions.
  std::vector<std::string> EmitOffsets(SourceWriter& w, const std::vector<LoopDim>& dims, const std::string& index,
                                       const std::string& prefix) const;

  void EmitPrelude(SourceWriter& w) const;
  std::string Signature(const std::string& name, int block) const;
  void EmitRowValues(SourceWriter& w, int depth) const;
  void EmitElementwise(SourceWriter& w, StitchCudaKernel& k);
  void EmitRows(SourceWriter& w, StitchCudaKernel& k);
  // One pass over the row's columns: computes the `needed` full values, accumulates `reductions`
  // and writes `full_outputs`.
  void EmitPass(SourceWriter& w, const std::vector<bool>& needed, std::vector<bool>& computed,
                const std::vector<int>& reductions, const std::vector<int>& full_outputs);

  const StitchProgram& program_;
  const StitchCudaSpec& spec_;
  Types types_;
  std::vector<ValueInfo> info_;
  bool index64_ = false;
  bool registers_ = false;  // full values held in per-thread arrays across passes
  int threads_ = 1;         // T
  int elements_ = 1;        // E
  std::vector<LoopDim> row_dims_, col_dims_;
};

std::string KernelGenerator::Lit(double v) const {
  const double value = types_.is_double ? v : static_cast<double>(static_cast<float>(v));
  if (std::isinf(value)) {
    std::string inf = types_.is_double ? "__longlong_as_double(0x7ff0000000000000ll)" : "__int_as_float(0x7f800000)";
    return value > 0 ? inf : "(-" + inf + ")";
  }
  const char* suffix = types_.is_double ? "" : "f";
  char buf[64];
  if (value == std::floor(value) && std::fabs(value) < 16777216.0) {
    std::snprintf(buf, sizeof buf, "%.1f%s", value, suffix);  // small integers read better in decimal
  } else {
    std::snprintf(buf, sizeof buf, "%a%s", value, suffix);  // hex float: exact
  }
  return std::signbit(value) ? std::string("(") + buf + ")" : buf;
}

std::string KernelGenerator::Unary(StitchOp op, const std::string& x) const {
  const std::string one = Lit(1), half = Lit(0.5);
  switch (op) {
    case StitchOp::Neg: return "(-" + x + ")";
    case StitchOp::Exp: return Fn("expf", "exp") + "(" + x + ")";
    case StitchOp::Log: return Fn("logf", "log") + "(" + x + ")";
    case StitchOp::Sqrt: return Fn("sqrtf", "sqrt") + "(" + x + ")";
    case StitchOp::Rsqrt: return Fn("rsqrtf", "rsqrt") + "(" + x + ")";
    case StitchOp::Tanh: return Fn("tanhf", "tanh") + "(" + x + ")";
    case StitchOp::Sigmoid: return "(" + one + " / (" + one + " + " + Fn("expf", "exp") + "(-" + x + ")))";
    case StitchOp::Relu: return "ag_max(" + x + ", " + Lit(0) + ")";  // NaN stays NaN, like torch
    case StitchOp::Gelu:
      return "(" + half + " * " + x + " * (" + one + " + " + Fn("erff", "erf") + "(" + x + " * " + Lit(std::sqrt(0.5)) +
             ")))";
    case StitchOp::GeluTanh: {
      const double kBeta = std::sqrt(2.0 / 3.14159265358979323846);
      return "(" + half + " * " + x + " * (" + one + " + " + Fn("tanhf", "tanh") + "(" + Lit(kBeta) + " * (" + x +
             " + " + Lit(0.044715) + " * " + x + " * " + x + " * " + x + "))))";
    }
    case StitchOp::Abs: return Fn("fabsf", "fabs") + "(" + x + ")";
    case StitchOp::Reciprocal: return "(" + one + " / " + x + ")";
    case StitchOp::Erf: return Fn("erff", "erf") + "(" + x + ")";
    default: throw Error(std::string("stitched (CUDA): '") + NameOf(op) + "' is not a unary op");
  }
}

std::string KernelGenerator::Binary(int v, const std::string& a, const std::string& b) const {
  const StitchStatement& s = program_.statements[v];
  switch (s.op) {
    case StitchOp::Add: return "(" + a + " + " + b + ")";
    case StitchOp::Sub: return "(" + a + " - " + b + ")";
    case StitchOp::Mul: return "(" + a + " * " + b + ")";
    case StitchOp::Div: return "(" + a + " / " + b + ")";
    case StitchOp::Max: return "ag_max(" + a + ", " + b + ")";
    case StitchOp::Min: return "ag_min(" + a + ", " + b + ")";
    case StitchOp::Pow: {
      // Constant exponents that have an exact cheaper form, as torch does for tensor ** scalar.
      const StitchStatement& e = program_.statements[s.args[1]];
      if (e.op == StitchOp::Constant) {
        if (e.constant == 1) return a;
        if (e.constant == 2) return "(" + a + " * " + a + ")";
        if (e.constant == 3) return "(" + a + " * " + a + " * " + a + ")";
        if (e.constant == 0.5) return Fn("sqrtf", "sqrt") + "(" + a + ")";
        if (e.constant == -0.5) return Fn("rsqrtf", "rsqrt") + "(" + a + ")";
        if (e.constant == -1) return "(" + Lit(1) + " / " + a + ")";
        if (e.constant == -2) return "(" + Lit(1) + " / (" + a + " * " + a + "))";
      }
      return Fn("powf", "pow") + "(" + a + ", " + b + ")";
    }
    default: throw Error(std::string("stitched (CUDA): '") + NameOf(s.op) + "' is not a binary op");
  }
}

std::string KernelGenerator::Expression(int v, const std::vector<std::string>& input_offsets,
                                        const std::string& guard) const {
  const StitchStatement& s = program_.statements[v];
  if (s.op == StitchOp::Input) {
    std::string load = "ag_ld(in" + std::to_string(s.input) + " + (" + input_offsets[s.input] + "))";
    return guard.empty() ? load : "(" + guard + " ? " + load + " : " + Lit(0) + ")";
  }
  if (s.op == StitchOp::Constant) return Lit(s.constant);
  if (ArityOf(s.op) == 1) return Unary(s.op, Ref(s.args[0]));
  return Binary(v, Ref(s.args[0]), Ref(s.args[1]));
}

std::vector<std::string> KernelGenerator::EmitOffsets(SourceWriter& w, const std::vector<LoopDim>& dims,
                                                      const std::string& index, const std::string& prefix) const {
  const std::string it = index64_ ? "unsigned long long" : "unsigned";
  std::vector<std::string> digits(dims.size());
  if (dims.size() == 1) {
    digits[0] = index;
  } else if (dims.size() > 1) {
    // Mixed radix, innermost digit first; the divisors are constants, so these are multiply-shifts.
    w.Line(it + " " + prefix + "_rest = " + index + ";");
    for (int d = static_cast<int>(dims.size()) - 1; d >= 0; --d) {
      const std::string name = prefix + std::to_string(d);
      digits[d] = name;
      if (d == 0) {
        w.Line("const " + it + " " + name + " = " + prefix + "_rest;");
      } else {
        w.Line("const " + it + " " + name + " = " + prefix + "_rest % " + Index(dims[d].size) + ";");
        w.Line(prefix + "_rest /= " + Index(dims[d].size) + ";");
      }
    }
  }
  std::vector<std::string> offsets;
  for (size_t i = 0; i < spec_.strides.size(); ++i) {
    std::string sum;
    for (size_t d = 0; d < dims.size(); ++d) {
      const int64_t stride = dims[d].strides[i];
      if (stride == 0) continue;
      sum += (sum.empty() ? "" : " + ") + (stride == 1 ? digits[d] : digits[d] + " * " + Index(stride));
    }
    offsets.push_back(sum.empty() ? Index(0) : sum);
  }
  return offsets;
}

void KernelGenerator::EmitPrelude(SourceWriter& w) const {
  const std::string& ct = types_.compute;
  w.Line("// Generated by autograph for: " + program_.ToString());
  w.Line("// dtype " + spec_.dtype + ", " + spec_.Key());
  if (spec_.dtype == "__half") {
    w.Line("__device__ __forceinline__ float ag_ld(const unsigned short* p) {");
    w.Line("  float f; unsigned short h = *p; asm(\"cvt.f32.f16 %0, %1;\" : \"=f\"(f) : \"h\"(h)); return f;");
    w.Line("}");
    w.Line("__device__ __forceinline__ unsigned short ag_st(float f) {");
    w.Line("  unsigned short h; asm(\"cvt.rn.f16.f32 %0, %1;\" : \"=h\"(h) : \"f\"(f)); return h;");
    w.Line("}");
  } else if (spec_.dtype == "__nv_bfloat16") {
    w.Line(
        "__device__ __forceinline__ float ag_ld(const unsigned short* p) { return __uint_as_float(((unsigned)*p) << "
        "16); }");
    w.Line("__device__ __forceinline__ unsigned short ag_st(float f) {  // round to nearest even, NaN stays quiet NaN");
    w.Line("  unsigned u = __float_as_uint(f);");
    w.Line("  if (f != f) return (unsigned short)((u >> 16) | 0x40u);");
    w.Line("  u += 0x7fffu + ((u >> 16) & 1u);");
    w.Line("  return (unsigned short)(u >> 16);");
    w.Line("}");
  } else {
    w.Line("__device__ __forceinline__ " + ct + " ag_ld(const " + ct + "* p) { return *p; }");
    w.Line("__device__ __forceinline__ " + ct + " ag_st(" + ct + " v) { return v; }");
  }
  // torch's max/min propagate NaN from either side.
  w.Line("__device__ __forceinline__ " + ct + " ag_max(" + ct + " a, " + ct +
         " b) { return (a != a || a > b) ? a : b; }");
  w.Line("__device__ __forceinline__ " + ct + " ag_min(" + ct + " a, " + ct +
         " b) { return (a != a || a < b) ? a : b; }");
  w.Line("");
}

std::string KernelGenerator::Signature(const std::string& name, int block) const {
  std::string params;
  for (size_t i = 0; i < spec_.strides.size(); ++i) {
    params +=
        (params.empty() ? "" : ", ") + std::string("const ") + types_.storage + "* __restrict__ in" + std::to_string(i);
  }
  for (size_t o = 0; o < program_.outputs.size(); ++o) {
    params += ", " + types_.storage + "* __restrict__ out" + std::to_string(o);
  }
  return "extern \"C\" __global__ void __launch_bounds__(" + std::to_string(block) + ") " + name + "(" + params + ")";
}

// Row values other than reductions that become known after `depth` reductions in sequence.
void KernelGenerator::EmitRowValues(SourceWriter& w, int depth) const {
  for (size_t v = 0; v < program_.statements.size(); ++v) {
    const StitchStatement& s = program_.statements[v];
    if (info_[v].full || info_[v].depth != depth || IsReduction(s.op)) continue;
    w.Line("const " + types_.compute + " v" + std::to_string(v) + " = " + Expression(static_cast<int>(v), {}, "") +
           ";");
  }
}

void KernelGenerator::EmitElementwise(SourceWriter& w, StitchCudaKernel& k) {
  const int64_t n = spec_.rows * spec_.cols;
  // Without reductions the row/column split only matters for row outputs (constant per row), which
  // get their own loop: coalesce across it.
  col_dims_ = CoalesceDims(spec_, 0, static_cast<int>(spec_.domain.size()));
  k.col_dims = static_cast<int>(col_dims_.size());
  k.mode = "elementwise";
  k.name = "autograph_stitched_elementwise";
  bool row_outputs = false;
  std::vector<int> targets;
  for (size_t o = 0; o < program_.outputs.size(); ++o) {
    if (spec_.row_outputs[o]) {
      row_outputs = true;
    } else {
      targets.push_back(program_.outputs[o].value);
    }
  }
  const int64_t work = std::max<int64_t>(n, row_outputs ? spec_.rows : 0);
  k.launch.block = kStitchElementwiseBlock;
  k.launch.grid =
      static_cast<unsigned>(std::min<int64_t>(std::max<int64_t>(CeilDiv(work, k.launch.block), 1), kMaxGrid));
  k.empty = work == 0;

  const std::string it = index64_ ? "unsigned long long" : "unsigned";
  const std::string& ct = types_.compute;
  w.Open(Signature(k.name, k.launch.block));
  EmitRowValues(w, 0);
  w.Line("const " + it + " step = (" + it + ")gridDim.x * blockDim.x;");
  w.Line("const " + it + " first = (" + it + ")blockIdx.x * blockDim.x + threadIdx.x;");
  if (!targets.empty() && n > 0) {
    w.Open("for (" + it + " i = first; i < " + Index(n) + "; i += step)");
    std::vector<std::string> offsets = EmitOffsets(w, col_dims_, "i", "d");
    std::vector<bool> needed = FullClosure(program_, info_, targets);
    for (size_t v = 0; v < program_.statements.size(); ++v) {
      if (!needed[v]) continue;
      w.Line("const " + ct + " v" + std::to_string(v) + " = " + Expression(static_cast<int>(v), offsets, "") + ";");
    }
    for (size_t o = 0; o < program_.outputs.size(); ++o) {
      if (!spec_.row_outputs[o])
        w.Line("out" + std::to_string(o) + "[i] = ag_st(v" + std::to_string(program_.outputs[o].value) + ");");
    }
    w.Close();
  }
  if (row_outputs) {
    w.Open("for (" + it + " r = first; r < " + Index(spec_.rows) + "; r += step)");
    for (size_t o = 0; o < program_.outputs.size(); ++o) {
      if (spec_.row_outputs[o])
        w.Line("out" + std::to_string(o) + "[r] = ag_st(v" + std::to_string(program_.outputs[o].value) + ");");
    }
    w.Close();
  }
  w.Close();
}

void KernelGenerator::EmitPass(SourceWriter& w, const std::vector<bool>& needed, std::vector<bool>& computed,
                               const std::vector<int>& reductions, const std::vector<int>& full_outputs) {
  const std::string it = index64_ ? "unsigned long long" : "unsigned";
  const std::string& ct = types_.compute;
  const bool sub_warp = threads_ <= 32;
  if (registers_) {
    // Unrolled: the arrays are indexed by constants and stay in registers.
    w.Line("#pragma unroll");
    w.Open("for (int e = 0; e < " + std::to_string(elements_) + "; ++e)");
    w.Line("const " + it + " col = lane + (" + it + ")e * " + Index(threads_) + ";");
    w.Line(std::string("const bool ok = ") + (sub_warp ? "row_ok && " : "") + "col < " + Index(spec_.cols) + ";");
  } else {
    w.Open("for (" + it + " col = lane; " + (sub_warp ? "row_ok && " : "") + "col < " + Index(spec_.cols) +
           "; col += " + Index(threads_) + ")");
  }
  bool any_load = false;
  for (size_t v = 0; v < program_.statements.size(); ++v) {
    if (needed[v] && (!registers_ || !computed[v]) && program_.statements[v].op == StitchOp::Input) any_load = true;
  }
  std::vector<std::string> offsets;
  if (any_load) {
    std::vector<std::string> col_offsets = EmitOffsets(w, col_dims_, "col", "c");
    for (size_t i = 0; i < col_offsets.size(); ++i) {
      offsets.push_back("row_off" + std::to_string(i) + " + " + col_offsets[i]);
    }
  }
  for (size_t v = 0; v < program_.statements.size(); ++v) {
    if (!needed[v]) continue;
    if (registers_) {
      if (computed[v]) continue;
      w.Line(Ref(static_cast<int>(v)) + " = " + Expression(static_cast<int>(v), offsets, "ok") + ";");
      computed[v] = true;
    } else {
      w.Line("const " + ct + " v" + std::to_string(v) + " = " + Expression(static_cast<int>(v), offsets, "") + ";");
    }
  }
  const std::string guard = registers_ ? "if (ok) " : "";
  for (int r : reductions) {
    const StitchStatement& s = program_.statements[r];
    const std::string acc = "acc" + std::to_string(r), x = Ref(s.args[0]);
    if (s.op == StitchOp::RowMax) {
      w.Line(guard + acc + " = ag_max(" + acc + ", " + x + ");");
    } else if (s.op == StitchOp::RowMin) {
      w.Line(guard + acc + " = ag_min(" + acc + ", " + x + ");");
    } else {
      w.Line(guard + acc + " += " + x + ";");
    }
  }
  for (int o : full_outputs) {
    w.Line(guard + "out" + std::to_string(o) + "[row * " + Index(spec_.cols) + " + col] = ag_st(" +
           Ref(program_.outputs[o].value) + ");");
  }
  w.Close();
}

void KernelGenerator::EmitRows(SourceWriter& w, StitchCudaKernel& k) {
  const std::string it = index64_ ? "unsigned long long" : "unsigned";
  const std::string& ct = types_.compute;
  row_dims_ = CoalesceDims(spec_, 0, spec_.split);
  col_dims_ = spec_.cols == 0 ? std::vector<LoopDim>{}
                              : CoalesceDims(spec_, spec_.split, static_cast<int>(spec_.domain.size()));
  k.row_dims = static_cast<int>(row_dims_.size());
  k.col_dims = static_cast<int>(col_dims_.size());
  threads_ = ThreadsPerRow(spec_.cols);
  elements_ = static_cast<int>(std::min<int64_t>(std::max<int64_t>(CeilDiv(spec_.cols, threads_), 1), 1 << 30));
  registers_ = elements_ <= kStitchMaxRegisterElements;
  k.mode = registers_ ? "rows-registers" : "rows-streaming";
  k.name = registers_ ? "autograph_stitched_rows_registers" : "autograph_stitched_rows_streaming";
  k.threads_per_row = threads_;
  k.elements_per_thread = elements_;
  const bool sub_warp = threads_ <= 32;
  const int rows_per_block = sub_warp ? 256 / threads_ : 1;
  const int warps = threads_ / 32;  // block mode only

  // Passes: pass p (1-based) computes the reductions that wait for p - 1 others; the last pass
  // writes the full outputs.
  int passes = 0;
  for (size_t v = 0; v < program_.statements.size(); ++v) {
    if (IsReduction(program_.statements[v].op)) passes = std::max(passes, info_[v].depth);
  }
  std::vector<std::vector<int>> reductions(passes + 1);
  size_t most_reductions = 0;
  for (size_t v = 0; v < program_.statements.size(); ++v) {
    if (!IsReduction(program_.statements[v].op)) continue;
    reductions[info_[v].depth].push_back(static_cast<int>(v));
    most_reductions = std::max(most_reductions, reductions[info_[v].depth].size());
  }
  std::vector<int> full_outputs, full_output_values;
  for (size_t o = 0; o < program_.outputs.size(); ++o) {
    if (!spec_.row_outputs[o]) {
      full_outputs.push_back(static_cast<int>(o));
      full_output_values.push_back(program_.outputs[o].value);
    }
  }

  k.launch.block = static_cast<unsigned>(sub_warp ? 256 : threads_);
  k.launch.grid =
      static_cast<unsigned>(std::min<int64_t>(std::max<int64_t>(CeilDiv(spec_.rows, rows_per_block), 1), kMaxGrid));
  k.launch.shared_bytes = sub_warp ? 0 : static_cast<unsigned>(most_reductions * warps * (types_.is_double ? 8 : 4));
  k.empty = spec_.rows == 0;

  w.Open(Signature(k.name, k.launch.block));
  if (!sub_warp) {
    w.Line("extern __shared__ __align__(16) unsigned char ag_shared_bytes[];");
    w.Line(ct + "* ag_shared = reinterpret_cast<" + ct + "*>(ag_shared_bytes);  // [reduction][warp]");
    w.Line("const unsigned lane = threadIdx.x;");
    w.Line("const unsigned warp = threadIdx.x / 32;");
  } else {
    w.Line("const unsigned lane = threadIdx.x % " + std::to_string(threads_) + "u;");
    w.Line("const unsigned row_in_block = threadIdx.x / " + std::to_string(threads_) + "u;");
  }
  EmitRowValues(w, 0);
  std::vector<bool> computed(program_.statements.size(), false);
  if (registers_) {
    std::vector<int> everything = full_output_values;
    for (const auto& pass : reductions)
      for (int r : pass) everything.push_back(program_.statements[r].args[0]);
    std::vector<bool> held = FullClosure(program_, info_, everything);
    for (size_t v = 0; v < held.size(); ++v) {
      if (held[v]) w.Line(ct + " v" + std::to_string(v) + "[" + std::to_string(elements_) + "];");
    }
  }
  // Uniform over the block, so that every lane takes part in the shuffles and barriers below.
  w.Open("for (" + it + " row_base = (" + it + ")blockIdx.x * " + Index(rows_per_block) + "; row_base < " +
         Index(spec_.rows) + "; row_base += (" + it + ")gridDim.x * " + Index(rows_per_block) + ")");
  if (sub_warp) {
    w.Line("const " + it + " row = row_base + row_in_block;");
    w.Line("const bool row_ok = row < " + Index(spec_.rows) + ";");
  } else {
    w.Line("const " + it + " row = row_base;");
  }
  {
    std::vector<std::string> row_offsets = EmitOffsets(w, row_dims_, "row", "r");
    for (size_t i = 0; i < row_offsets.size(); ++i) {
      w.Line("const " + it + " row_off" + std::to_string(i) + " = " + row_offsets[i] + ";");
    }
  }
  for (int p = 1; p <= passes; ++p) {
    w.Line("// pass " + std::to_string(p) + ": reductions that wait for " + std::to_string(p - 1) + " other(s)");
    std::vector<int> args;
    for (int r : reductions[p]) {
      const StitchOp op = program_.statements[r].op;
      const std::string identity = op == StitchOp::RowMax   ? Lit(-INFINITY)
                                   : op == StitchOp::RowMin ? Lit(INFINITY)
                                                            : Lit(0);
      w.Line(ct + " acc" + std::to_string(r) + " = " + identity + ";");
      args.push_back(program_.statements[r].args[0]);
    }
    EmitPass(w, FullClosure(program_, info_, args), computed, reductions[p], {});
    // Combine the row's lanes: shuffles within each warp (or the row's part of it), then across warps.
    auto combine = [&](int r, const std::string& a, const std::string& b) {
      const StitchOp op = program_.statements[r].op;
      if (op == StitchOp::RowMax) return "ag_max(" + a + ", " + b + ")";
      if (op == StitchOp::RowMin) return "ag_min(" + a + ", " + b + ")";
      return a + " + " + b;
    };
    w.Line("#pragma unroll");
    w.Open("for (int offset = " + std::to_string(std::min(threads_, 32) / 2) + "; offset > 0; offset /= 2)");
    for (int r : reductions[p]) {
      const std::string acc = "acc" + std::to_string(r);
      w.Line(acc + " = " + combine(r, acc, "__shfl_xor_sync(0xffffffffu, " + acc + ", offset)") + ";");
    }
    w.Close();
    if (!sub_warp) {
      w.Line("__syncthreads();  // earlier readers of ag_shared are done");
      w.Open("if (threadIdx.x % 32 == 0)");
      for (size_t j = 0; j < reductions[p].size(); ++j) {
        w.Line("ag_shared[" + std::to_string(j * warps) + " + warp] = acc" + std::to_string(reductions[p][j]) + ";");
      }
      w.Close();
      w.Line("__syncthreads();");
      for (size_t j = 0; j < reductions[p].size(); ++j) {
        const int r = reductions[p][j];
        const std::string acc = "acc" + std::to_string(r);
        w.Line(acc + " = ag_shared[" + std::to_string(j * warps) + "];");
        w.Line("#pragma unroll");
        w.Line("for (int w = 1; w < " + std::to_string(warps) + "; ++w) " + acc + " = " +
               combine(r, acc, "ag_shared[" + std::to_string(j * warps) + " + w]") + ";");
      }
    }
    for (int r : reductions[p]) {
      const std::string acc = "acc" + std::to_string(r);
      const std::string value =
          program_.statements[r].op == StitchOp::RowMean ? acc + " / " + Lit(static_cast<double>(spec_.cols)) : acc;
      w.Line("const " + ct + " v" + std::to_string(r) + " = " + value + ";");
    }
    EmitRowValues(w, p);
  }
  if (!full_outputs.empty()) {
    w.Line("// last pass: full outputs");
    EmitPass(w, FullClosure(program_, info_, full_output_values), computed, {}, full_outputs);
  }
  bool row_outputs = false;
  for (size_t o = 0; o < program_.outputs.size(); ++o) row_outputs = row_outputs || spec_.row_outputs[o];
  if (row_outputs) {
    w.Open(std::string("if (lane == 0") + (sub_warp ? " && row_ok" : "") + ")");
    for (size_t o = 0; o < program_.outputs.size(); ++o) {
      if (spec_.row_outputs[o])
        w.Line("out" + std::to_string(o) + "[row] = ag_st(v" + std::to_string(program_.outputs[o].value) + ");");
    }
    w.Close();
  }
  w.Close();  // rows
  w.Close();  // kernel
}

StitchCudaKernel KernelGenerator::Generate() {
  const int dims = static_cast<int>(spec_.domain.size());
  if (static_cast<int>(spec_.strides.size()) != program_.num_inputs()) {
    throw Error("stitched (CUDA): the program reads " + std::to_string(program_.num_inputs()) +
                " inputs, the spec has " + std::to_string(spec_.strides.size()));
  }
  for (const auto& s : spec_.strides) {
    if (static_cast<int>(s.size()) != dims)
      throw Error("stitched (CUDA): input strides do not match the domain's dims");
  }
  if (spec_.row_outputs.size() != program_.outputs.size())
    throw Error("stitched (CUDA): output kinds do not match the program");
  if (spec_.split < 0 || spec_.split > dims) throw Error("stitched (CUDA): split out of range");

  // 32-bit index math unless an element index or offset might not fit (grid-stride steps stay below 2^28).
  int64_t largest = spec_.rows * spec_.cols;
  for (const auto& strides : spec_.strides) {
    int64_t offset = 0;
    for (int d = 0; d < dims; ++d) offset += std::max<int64_t>(spec_.domain[d] - 1, 0) * strides[d];
    largest = std::max(largest, offset);
  }
  index64_ = largest >= (int64_t{1} << 31);

  StitchCudaKernel kernel;
  kernel.index64 = index64_;
  SourceWriter w;
  EmitPrelude(w);
  if (program_.has_reductions()) {
    EmitRows(w, kernel);
  } else {
    EmitElementwise(w, kernel);
  }
  kernel.source = w.str();
  return kernel;
}

std::string Join(const std::vector<int64_t>& v) {
  std::string s;
  for (size_t i = 0; i < v.size(); ++i) s += (i ? "," : "") + std::to_string(v[i]);
  return s;
}

}  // namespace

std::string StitchCudaSpec::Key() const {
  std::string key = "dtype=" + dtype + " domain=[" + Join(domain) + "] split=" + std::to_string(split) + " strides=";
  for (const auto& s : strides) key += "[" + Join(s) + "]";
  key += " outputs=";
  for (bool row : row_outputs) key += row ? 'r' : 'f';
  return key;
}

StitchCudaSpec MakeStitchCudaSpec(const StitchProgram& program, const std::string& dtype,
                                  const std::vector<int64_t>& domain, int split,
                                  const std::vector<std::vector<int64_t>>& strides) {
  TypesOf(dtype);  // throws on an unsupported dtype
  if (split < 0 || split > static_cast<int>(domain.size())) {
    throw Error("stitched (CUDA): split " + std::to_string(split) + " outside the domain's " +
                std::to_string(domain.size()) + " dims");
  }
  StitchCudaSpec spec;
  spec.dtype = dtype;
  spec.domain = domain;
  spec.split = split;
  spec.strides = strides;
  for (int d = 0; d < static_cast<int>(domain.size()); ++d) (d < split ? spec.rows : spec.cols) *= domain[d];
  for (const StitchOutput& o : program.outputs) spec.row_outputs.push_back(program.is_row(o.value));
  return spec;
}

StitchCudaKernel GenerateStitchCudaKernel(const StitchProgram& program, const StitchCudaSpec& spec) {
  return KernelGenerator(program, spec).Generate();
}

std::vector<std::string> StitchNvrtcOptions(const std::string& arch) {
  // No fast-math: results should match ATen's within rounding, not within approximation error.
  return {"--gpu-architecture=" + arch, "--std=c++17"};
}

}  // namespace autograph
