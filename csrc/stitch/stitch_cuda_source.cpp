#include "stitch/stitch_cuda_source.h"

#include <algorithm>
#include <cmath>

#include "autograph/error.h"
#include "stitch/stitch_cuda_generator.h"

namespace autograph {

namespace stitch_cuda {

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

// What PlanRows decides for a program with reductions.
struct KernelGenerator::RowPlan {
  bool sub_warp = true;   // T <= 32: several rows per block, one per T lanes; else one row per block
  int rows_per_block = 1;
  int warps = 0;          // block mode only
  int passes = 0;         // pass p (1-based) computes the reductions that wait for p - 1 others
  std::vector<std::vector<int>> reductions;  // per pass
  std::vector<int> full_outputs, full_output_values;  // written by the last pass
};

KernelGenerator::RowPlan KernelGenerator::PlanRows(StitchCudaKernel& k) {
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
  RowPlan plan;
  plan.sub_warp = threads_ <= 32;
  plan.rows_per_block = plan.sub_warp ? 256 / threads_ : 1;
  plan.warps = threads_ / 32;

  for (size_t v = 0; v < program_.statements.size(); ++v) {
    if (IsReduction(program_.statements[v].op)) plan.passes = std::max(plan.passes, info_[v].depth);
  }
  plan.reductions.resize(plan.passes + 1);
  size_t most_reductions = 0;
  for (size_t v = 0; v < program_.statements.size(); ++v) {
    if (!IsReduction(program_.statements[v].op)) continue;
    plan.reductions[info_[v].depth].push_back(static_cast<int>(v));
    most_reductions = std::max(most_reductions, plan.reductions[info_[v].depth].size());
  }
  for (size_t o = 0; o < program_.outputs.size(); ++o) {
    if (!spec_.row_outputs[o]) {
      plan.full_outputs.push_back(static_cast<int>(o));
      plan.full_output_values.push_back(program_.outputs[o].value);
    }
  }

  k.launch.block = static_cast<unsigned>(plan.sub_warp ? 256 : threads_);
  k.launch.grid = static_cast<unsigned>(
      std::min<int64_t>(std::max<int64_t>(CeilDiv(spec_.rows, plan.rows_per_block), 1), kMaxGrid));
  k.launch.shared_bytes =
      plan.sub_warp ? 0 : static_cast<unsigned>(most_reductions * plan.warps * (types_.is_double ? 8 : 4));
  k.empty = spec_.rows == 0;
  return plan;
}

// Lanes, shared memory (block mode), the row values known up front and, in registers mode, the
// per-thread arrays of the full values the passes keep.
void KernelGenerator::EmitRowsHead(SourceWriter& w, const RowPlan& plan) const {
  const std::string& ct = types_.compute;
  if (!plan.sub_warp) {
    w.Line("extern __shared__ __align__(16) unsigned char ag_shared_bytes[];");
    w.Line(ct + "* ag_shared = reinterpret_cast<" + ct + "*>(ag_shared_bytes);  // [reduction][warp]");
    w.Line("const unsigned lane = threadIdx.x;");
    w.Line("const unsigned warp = threadIdx.x / 32;");
  } else {
    w.Line("const unsigned lane = threadIdx.x % " + std::to_string(threads_) + "u;");
    w.Line("const unsigned row_in_block = threadIdx.x / " + std::to_string(threads_) + "u;");
  }
  EmitRowValues(w, 0);
  if (!registers_) return;
  std::vector<int> everything = plan.full_output_values;
  for (const auto& pass : plan.reductions)
    for (int r : pass) everything.push_back(program_.statements[r].args[0]);
  std::vector<bool> held = FullClosure(program_, info_, everything);
  for (size_t v = 0; v < held.size(); ++v) {
    if (held[v]) w.Line(ct + " v" + std::to_string(v) + "[" + std::to_string(elements_) + "];");
  }
}

// Opens the grid-stride loop over rows (uniform over the block, so that every lane takes part in the
// shuffles and barriers) and computes the row's input offsets.
void KernelGenerator::EmitRowLoopHead(SourceWriter& w, const RowPlan& plan) const {
  const std::string it = index64_ ? "unsigned long long" : "unsigned";
  w.Open("for (" + it + " row_base = (" + it + ")blockIdx.x * " + Index(plan.rows_per_block) + "; row_base < " +
         Index(spec_.rows) + "; row_base += (" + it + ")gridDim.x * " + Index(plan.rows_per_block) + ")");
  if (plan.sub_warp) {
    w.Line("const " + it + " row = row_base + row_in_block;");
    w.Line("const bool row_ok = row < " + Index(spec_.rows) + ";");
  } else {
    w.Line("const " + it + " row = row_base;");
  }
  std::vector<std::string> row_offsets = EmitOffsets(w, row_dims_, "row", "r");
  for (size_t i = 0; i < row_offsets.size(); ++i) {
    w.Line("const " + it + " row_off" + std::to_string(i) + " = " + row_offsets[i] + ";");
  }
}

// Accumulators at their identity, one pass over the columns, the lanes combined, then the row values
// that this pass makes known.
void KernelGenerator::EmitReductionPass(SourceWriter& w, const RowPlan& plan, int pass, std::vector<bool>& computed) {
  const std::string& ct = types_.compute;
  const std::vector<int>& reductions = plan.reductions[pass];
  w.Line("// pass " + std::to_string(pass) + ": reductions that wait for " + std::to_string(pass - 1) + " other(s)");
  std::vector<int> args;
  for (int r : reductions) {
    const StitchOp op = program_.statements[r].op;
    const std::string identity = op == StitchOp::RowMax   ? Lit(-INFINITY)
                                 : op == StitchOp::RowMin ? Lit(INFINITY)
                                                          : Lit(0);
    w.Line(ct + " acc" + std::to_string(r) + " = " + identity + ";");
    args.push_back(program_.statements[r].args[0]);
  }
  EmitPass(w, FullClosure(program_, info_, args), computed, reductions, {});
  EmitCombineLanes(w, plan, reductions);
  for (int r : reductions) {
    const std::string acc = "acc" + std::to_string(r);
    const std::string value =
        program_.statements[r].op == StitchOp::RowMean ? acc + " / " + Lit(static_cast<double>(spec_.cols)) : acc;
    w.Line("const " + ct + " v" + std::to_string(r) + " = " + value + ";");
  }
  EmitRowValues(w, pass);
}

// Combines the row's lanes: shuffles within each warp (or the row's part of it), then, in block mode,
// across warps through shared memory.
void KernelGenerator::EmitCombineLanes(SourceWriter& w, const RowPlan& plan, const std::vector<int>& reductions) const {
  auto combine = [&](int r, const std::string& a, const std::string& b) {
    const StitchOp op = program_.statements[r].op;
    if (op == StitchOp::RowMax) return "ag_max(" + a + ", " + b + ")";
    if (op == StitchOp::RowMin) return "ag_min(" + a + ", " + b + ")";
    return a + " + " + b;
  };
  w.Line("#pragma unroll");
  w.Open("for (int offset = " + std::to_string(std::min(threads_, 32) / 2) + "; offset > 0; offset /= 2)");
  for (int r : reductions) {
    const std::string acc = "acc" + std::to_string(r);
    w.Line(acc + " = " + combine(r, acc, "__shfl_xor_sync(0xffffffffu, " + acc + ", offset)") + ";");
  }
  w.Close();
  if (plan.sub_warp) return;
  const int warps = plan.warps;
  w.Line("__syncthreads();  // earlier readers of ag_shared are done");
  w.Open("if (threadIdx.x % 32 == 0)");
  for (size_t j = 0; j < reductions.size(); ++j) {
    w.Line("ag_shared[" + std::to_string(j * warps) + " + warp] = acc" + std::to_string(reductions[j]) + ";");
  }
  w.Close();
  w.Line("__syncthreads();");
  for (size_t j = 0; j < reductions.size(); ++j) {
    const int r = reductions[j];
    const std::string acc = "acc" + std::to_string(r);
    w.Line(acc + " = ag_shared[" + std::to_string(j * warps) + "];");
    w.Line("#pragma unroll");
    w.Line("for (int w = 1; w < " + std::to_string(warps) + "; ++w) " + acc + " = " +
           combine(r, acc, "ag_shared[" + std::to_string(j * warps) + " + w]") + ";");
  }
}

// Lane 0 of each row writes the row outputs.
void KernelGenerator::EmitRowOutputs(SourceWriter& w, const RowPlan& plan) const {
  bool row_outputs = false;
  for (size_t o = 0; o < program_.outputs.size(); ++o) row_outputs = row_outputs || spec_.row_outputs[o];
  if (!row_outputs) return;
  w.Open(std::string("if (lane == 0") + (plan.sub_warp ? " && row_ok" : "") + ")");
  for (size_t o = 0; o < program_.outputs.size(); ++o) {
    if (spec_.row_outputs[o])
      w.Line("out" + std::to_string(o) + "[row] = ag_st(v" + std::to_string(program_.outputs[o].value) + ");");
  }
  w.Close();
}

void KernelGenerator::EmitRows(SourceWriter& w, StitchCudaKernel& k) {
  const RowPlan plan = PlanRows(k);
  w.Open(Signature(k.name, k.launch.block));
  EmitRowsHead(w, plan);
  EmitRowLoopHead(w, plan);
  std::vector<bool> computed(program_.statements.size(), false);
  for (int p = 1; p <= plan.passes; ++p) EmitReductionPass(w, plan, p, computed);
  if (!plan.full_outputs.empty()) {
    w.Line("// last pass: full outputs");
    EmitPass(w, FullClosure(program_, info_, plan.full_output_values), computed, {}, plan.full_outputs);
  }
  EmitRowOutputs(w, plan);
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

}  // namespace stitch_cuda

namespace {

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
  stitch_cuda::TypesOf(dtype);  // throws on an unsupported dtype
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
  return stitch_cuda::KernelGenerator(program, spec).Generate();
}

std::vector<std::string> StitchNvrtcOptions(const std::string& arch) {
  // No fast-math: results should match ATen's within rounding, not within approximation error.
  return {"--gpu-architecture=" + arch, "--std=c++17"};
}

}  // namespace autograph
