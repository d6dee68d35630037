#pragma once
// The CUDA source generator behind GenerateStitchCudaKernel (stitch_cuda_source.h): what a
// specialization implies (coalesced loop dims, threads per row, which values are full or row values)
// and the KernelGenerator that writes the kernel text. Internal to stitch/ (namespace stitch_cuda).
#include <cstdint>
#include <sstream>
#include <string>
#include <vector>

#include "stitch/stitch_cuda_source.h"
#include "stitch/stitch_program.h"

namespace autograph::stitch_cuda {

constexpr unsigned kMaxGrid = 1u << 20;  // grid-stride loops cover the rest

int64_t CeilDiv(int64_t a, int64_t b);

// T: threads per row, a power of two. Short rows share a warp; rows up to 32 * kStitchMaxRegisterElements
// take a warp; longer rows take a block sized so that each thread holds at most kStitchMaxRegisterElements.
int ThreadsPerRow(int64_t cols);

// One dim of the iteration space after coalescing, with each input's element stride along it.
struct LoopDim {
  int64_t size = 1;
  std::vector<int64_t> strides;
};

// Domain dims [begin, end) without size-1 dims, neighbours merged where every input walks them as one
// (outer stride == inner stride * inner size; broadcast 0/0 qualifies), outermost first.
std::vector<LoopDim> CoalesceDims(const StitchCudaSpec& spec, int begin, int end);

struct ValueInfo {
  bool full = false;
  int depth = 0;  // how many reductions in sequence it waits for
};

std::vector<ValueInfo> AnalyzeValues(const StitchProgram& program);

// Full values that `targets` (full values) need, transitively through full arguments; row arguments
// are scalars computed earlier.
std::vector<bool> FullClosure(const StitchProgram& program, const std::vector<ValueInfo>& info,
                              const std::vector<int>& targets);

struct Types {
  std::string storage;  // element type of the kernel's pointers
  std::string compute;  // "float" or "double"
  bool is_double = false;
};

// Throws autograph::Error for an unsupported dtype.
Types TypesOf(const std::string& dtype);

// Indented lines of source.
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
  // Rows mode (programs with reductions), by row strategy: the mapping (sub-warp rows or a block per
  // row, registers or streaming), the kernel's head, each reduction pass with its lane combine, the
  // row outputs.
  struct RowPlan;
  void EmitRows(SourceWriter& w, StitchCudaKernel& k);
  RowPlan PlanRows(StitchCudaKernel& k);
  void EmitRowsHead(SourceWriter& w, const RowPlan& plan) const;
  void EmitRowLoopHead(SourceWriter& w, const RowPlan& plan) const;
  void EmitReductionPass(SourceWriter& w, const RowPlan& plan, int pass, std::vector<bool>& computed);
  void EmitCombineLanes(SourceWriter& w, const RowPlan& plan, const std::vector<int>& reductions) const;
  void EmitRowOutputs(SourceWriter& w, const RowPlan& plan) const;
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

}  // namespace autograph::stitch_cuda
