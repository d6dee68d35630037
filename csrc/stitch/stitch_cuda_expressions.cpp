// The parts of the stitched kernel's source that every mapping shares: specialization facts, literals,
// value expressions, index math, the prelude and the signature.
#include <algorithm>
#include <cmath>
#include <cstdio>

#include "autograph/error.h"
#include "stitch/stitch_cuda_generator.h"

namespace autograph::stitch_cuda {

namespace {

int64_t NextPowerOfTwo(int64_t v) {
  int64_t p = 1;
  while (p < v) p *= 2;
  return p;
}

}  // namespace

int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

int ThreadsPerRow(int64_t cols) {
  if (cols <= 32) return static_cast<int>(NextPowerOfTwo(std::max<int64_t>(cols, 1)));
  if (cols <= 32 * kStitchMaxRegisterElements) return 32;
  return static_cast<int>(
      std::min<int64_t>(NextPowerOfTwo(CeilDiv(cols, kStitchMaxRegisterElements)), kStitchMaxThreadsPerRow));
}

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

Types TypesOf(const std::string& dtype) {
  if (dtype == "float") return {"float", "float", false};
  if (dtype == "double") return {"double", "double", true};
  // Bit patterns: NVRTC has no built-in cuda_fp16.h / cuda_bf16.h, so conversions are written out.
  if (dtype == "__half" || dtype == "__nv_bfloat16") return {"unsigned short", "float", false};
  throw Error("stitched (CUDA): unsupported dtype '" + dtype + "' (float, double, __half, __nv_bfloat16)");
}

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

}  // namespace autograph::stitch_cuda
