// Code generation for stitched CUDA kernels (no GPU needed): how rows and columns are mapped onto
// threads, index math and constants in the source, and that every generated kernel compiles with
// NVRTC to PTX for compute_90 (NVRTC runs without a device). Running the kernels is
// stitched_cuda_test.cpp's job, on GPU machines.
#include <gtest/gtest.h>


#include <cstdint>
#include <string>
#include <vector>

#include "autograph/error.h"
#include "ops/nvrtc_library.h"
#include "stitch/stitch_cuda_source.h"
#include "stitch/stitch_program.h"
#include "stitch_test_programs.h"

namespace autograph {
namespace {

// Element strides of a contiguous tensor of `shape`, 0 along size-1 dims (as MakeStitchLayout gives).
std::vector<int64_t> Contiguous(const std::vector<int64_t>& shape) {
  std::vector<int64_t> strides(shape.size());
  int64_t step = 1;
  for (int d = static_cast<int>(shape.size()) - 1; d >= 0; --d) {
    strides[d] = shape[d] == 1 ? 0 : step;
    step *= shape[d];
  }
  return strides;
}

// The same dims stored in reverse order (a transposed tensor).
std::vector<int64_t> Transposed(const std::vector<int64_t>& shape) {
  std::vector<int64_t> strides(shape.size());
  int64_t step = 1;
  for (size_t d = 0; d < shape.size(); ++d) {
    strides[d] = shape[d] == 1 ? 0 : step;
    step *= shape[d];
  }
  return strides;
}

// A contiguous tensor holding only the dims in `keep`, broadcast over the others.
std::vector<int64_t> Broadcast(const std::vector<int64_t>& domain, const std::vector<bool>& keep) {
  std::vector<int64_t> shape(domain.size());
  for (size_t d = 0; d < domain.size(); ++d) shape[d] = keep[d] ? domain[d] : 1;
  return Contiguous(shape);
}

StitchCudaKernel Generate(const std::string& text, const std::vector<int64_t>& domain,
                          const std::vector<std::vector<int64_t>>& strides, const std::string& dtype = "float") {
  StitchProgram program = ParseStitchProgram(text);
  const int dims = static_cast<int>(domain.size());
  const int split = program.reduce_dims > 0 ? dims - program.reduce_dims : std::max(dims - 1, 0);
  return GenerateStitchCudaKernel(program, MakeStitchCudaSpec(program, dtype, domain, split, strides));
}

TEST(StitchCudaSource, ThreadsPerRowFollowRowLength) {
  struct Expected {
    int64_t cols;
    const char* mode;
    int threads, elements;
    unsigned block;
  };
  const Expected cases[] = {
      {1, "rows-registers", 1, 1, 256},
      {7, "rows-registers", 8, 1, 256},
      {32, "rows-registers", 32, 1, 256},
      {33, "rows-registers", 32, 2, 256},
      {256, "rows-registers", 32, 8, 256},
      {257, "rows-registers", 64, 5, 64},
      {768, "rows-registers", 128, 6, 128},
      {5000, "rows-registers", 1024, 5, 1024},
      {8192, "rows-registers", 1024, 8, 1024},
      {8193, "rows-streaming", 1024, 9, 1024},
      {1000000, "rows-streaming", 1024, 977, 1024},
  };
  for (const Expected& e : cases) {
    StitchCudaKernel k = Generate(kSoftmax, {37, e.cols}, {Contiguous({37, e.cols})});
    EXPECT_EQ(k.mode, e.mode) << e.cols;
    EXPECT_EQ(k.threads_per_row, e.threads) << e.cols;
    EXPECT_EQ(k.elements_per_thread, e.elements) << e.cols;
    EXPECT_EQ(k.launch.block, e.block) << e.cols;
    const unsigned rows_per_block = e.threads <= 32 ? 256 / e.threads : 1;
    EXPECT_EQ(k.launch.grid, (37 + rows_per_block - 1) / rows_per_block) << e.cols;
    EXPECT_NE(k.source.find(k.name), std::string::npos);
    EXPECT_FALSE(k.empty);
  }
}

TEST(StitchCudaSource, ReductionsInSequenceTakeOnePassEach) {
  // rowmax, then rowsum of exp(x - max), then rowmin of x - logsumexp: three passes, then the outputs.
  StitchCudaKernel k = Generate(kTwoReductions, {5, 768}, {Contiguous({5, 768})});
  EXPECT_NE(k.source.find("// pass 3"), std::string::npos) << k.source;
  EXPECT_EQ(k.source.find("// pass 4"), std::string::npos) << k.source;
  EXPECT_NE(k.source.find("// last pass"), std::string::npos) << k.source;
  // Independent reductions share a pass; no full outputs, no last pass.
  StitchCudaKernel moments =
      Generate("reduce 1; in 0; rowmean 0; rowmax 0; outrow 1; outrow 2", {5, 768}, {Contiguous({5, 768})});
  EXPECT_EQ(moments.source.find("// pass 2"), std::string::npos) << moments.source;
  EXPECT_EQ(moments.source.find("// last pass"), std::string::npos) << moments.source;
}

TEST(StitchCudaSource, SharedMemoryHoldsOnePartialPerWarpAndReduction) {
  // Block mode: [reductions in the busiest pass][warps] partials.
  const char* moments = "reduce 1; in 0; rowmean 0; mul 0 0; rowmean 2; rowmax 0; outrow 1; outrow 3; outrow 4";
  EXPECT_EQ(Generate(moments, {3, 768}, {Contiguous({3, 768})}).launch.shared_bytes, 3u * 4 * sizeof(float));
  EXPECT_EQ(Generate(moments, {3, 768}, {Contiguous({3, 768})}, "double").launch.shared_bytes, 3u * 4 * sizeof(double));
  EXPECT_EQ(Generate(kLayerNorm, {3, 5000},
                     {Contiguous({3, 5000}), Broadcast({3, 5000}, {false, true}), Broadcast({3, 5000}, {false, true})})
                .launch.shared_bytes,
            1u * 32 * sizeof(float));
  // Warp (or sub-warp) per row: shuffles only.
  EXPECT_EQ(Generate(moments, {3, 100}, {Contiguous({3, 100})}).launch.shared_bytes, 0u);
}

TEST(StitchCudaSource, CoalescesDimsEveryInputWalksAsOne) {
  const std::vector<int64_t> domain{4, 5, 6};
  // All contiguous (y is [4,5,6] too): one flat dim.
  EXPECT_EQ(Generate(kElementwise, domain, {Contiguous(domain), Contiguous(domain), Contiguous(domain)}).col_dims, 1);
  // y is [4,5,1]: dims 0 and 1 merge, dim 2 cannot (y does not move along it).
  EXPECT_EQ(
      Generate(kElementwise, domain, {Contiguous(domain), Broadcast(domain, {true, true, false}), Contiguous(domain)})
          .col_dims,
      2);
  // A transposed input keeps all three.
  StitchCudaKernel k =
      Generate(kElementwise, domain, {Contiguous(domain), Broadcast(domain, {true, true, false}), Transposed(domain)});
  EXPECT_EQ(k.col_dims, 3);
  EXPECT_NE(k.source.find("% 6u"), std::string::npos) << k.source;  // mixed radix with constant divisors
  // Size-1 dims vanish; rows and columns coalesce separately.
  StitchCudaKernel ln = Generate(kLayerNorm, {2, 1, 3, 768},
                                 {Contiguous({2, 1, 3, 768}), Broadcast({2, 1, 3, 768}, {false, false, false, true}),
                                  Broadcast({2, 1, 3, 768}, {false, false, false, true})});
  EXPECT_EQ(ln.row_dims, 1);
  EXPECT_EQ(ln.col_dims, 1);
  StitchCudaKernel keep = Generate(kKeepdim, {3, 4, 5}, {Contiguous({3, 4, 5})});
  EXPECT_EQ(keep.row_dims, 1);
  EXPECT_EQ(keep.col_dims, 1);
  StitchCudaKernel keep_t = Generate(kKeepdim, {3, 4, 5}, {Transposed({3, 4, 5})});
  EXPECT_EQ(keep_t.col_dims, 2);
}

TEST(StitchCudaSource, IndexMathWidensOnlyWhenNeeded) {
  StitchCudaKernel small = Generate(kSoftmax, {1000, 1000}, {Contiguous({1000, 1000})});
  EXPECT_FALSE(small.index64);
  EXPECT_EQ(small.source.find("unsigned long long"), std::string::npos);
  StitchCudaKernel big = Generate(kSoftmax, {70000, 40000}, {Contiguous({70000, 40000})});
  EXPECT_TRUE(big.index64);
  EXPECT_NE(big.source.find("unsigned long long"), std::string::npos);
  // Few elements, but a stride that reaches past 2^31.
  EXPECT_TRUE(Generate(kSoftmax, {2, 10}, {{int64_t{3} << 30, 1}}).index64);
}

TEST(StitchCudaSource, ConstantsAreExact) {
  const char* text = "reduce 0; in 0; const 0.1; mul 0 1; const -inf; max 2 3; out 4";
  StitchCudaKernel f = Generate(text, {8}, {{1}});
  EXPECT_NE(f.source.find("0x1.99999ap-4f"), std::string::npos) << f.source;  // 0.1 rounded to float
  EXPECT_NE(f.source.find("(-__int_as_float(0x7f800000))"), std::string::npos) << f.source;
  StitchCudaKernel d = Generate(text, {8}, {{1}}, "double");
  EXPECT_NE(d.source.find("0x1.999999999999ap-4"), std::string::npos) << d.source;
  EXPECT_NE(d.source.find("__longlong_as_double(0x7ff0000000000000ll)"), std::string::npos) << d.source;
}

TEST(StitchCudaSource, EmptyDomains) {
  EXPECT_TRUE(Generate(kSoftmax, {0, 7}, {Contiguous({0, 7})}).empty);
  EXPECT_TRUE(Generate(kElementwise, {0, 3}, {Contiguous({0, 3}), Contiguous({0, 3}), Contiguous({0, 3})}).empty);
  // No columns, but row outputs still get written (a sum of nothing is 0).
  EXPECT_FALSE(Generate(kKeepdim, {3, 0, 5}, {Contiguous({3, 0, 5})}).empty);
  EXPECT_FALSE(Generate(kElementwise, {3, 0}, {Contiguous({3, 0}), Contiguous({3, 0}), Contiguous({3, 0})}).empty);
}

TEST(StitchCudaSource, RejectsSpecsThatDoNotFitTheProgram) {
  StitchProgram program = ParseStitchProgram(kLayerNorm);
  EXPECT_THROW(MakeStitchCudaSpec(program, "int", {2, 3}, 1, {{3, 1}, {0, 1}, {0, 1}}), Error);
  EXPECT_THROW(MakeStitchCudaSpec(program, "float", {2, 3}, 3, {{3, 1}, {0, 1}, {0, 1}}), Error);
  EXPECT_THROW(GenerateStitchCudaKernel(program, MakeStitchCudaSpec(program, "float", {2, 3}, 1, {{3, 1}})), Error);
  EXPECT_THROW(GenerateStitchCudaKernel(program, MakeStitchCudaSpec(program, "float", {2, 3}, 1, {{3, 1}, {1}, {1}})),
               Error);
}

TEST(StitchCudaSource, KeyNamesEverythingTheKernelIsSpecializedTo) {
  StitchProgram program = ParseStitchProgram(kSoftmax);
  const std::string a = MakeStitchCudaSpec(program, "float", {4, 6}, 1, {{6, 1}}).Key();
  EXPECT_NE(a, MakeStitchCudaSpec(program, "float", {4, 6}, 1, {{1, 4}}).Key());
  EXPECT_NE(a, MakeStitchCudaSpec(program, "double", {4, 6}, 1, {{6, 1}}).Key());
  EXPECT_NE(a, MakeStitchCudaSpec(program, "float", {6, 4}, 1, {{4, 1}}).Key());
  EXPECT_NE(a, MakeStitchCudaSpec(program, "float", {4, 6}, 0, {{6, 1}}).Key());
  EXPECT_EQ(a, MakeStitchCudaSpec(program, "float", {4, 6}, 1, {{6, 1}}).Key());
}

#ifdef AUTOGRAPH_WITH_CUDA

// Compiles with the options the CUDA implementation uses, through the NVRTC it loads; returns "" or
// the log.
std::string CompileToPtx(const StitchCudaKernel& kernel, std::string* ptx) {
  const NvrtcLibrary& nvrtc = Nvrtc();
  nvrtcProgram program = nullptr;
  if (nvrtc.CreateProgram(&program, kernel.source.c_str(), "stitch_test.cu", 0, nullptr, nullptr) != NVRTC_SUCCESS) {
    return "nvrtcCreateProgram failed";
  }
  std::vector<std::string> options = StitchNvrtcOptions("compute_90");
  std::vector<const char*> pointers;
  for (const std::string& o : options) pointers.push_back(o.c_str());
  nvrtcResult status = nvrtc.CompileProgram(program, static_cast<int>(pointers.size()), pointers.data());
  std::string result;
  if (status != NVRTC_SUCCESS) {
    size_t size = 0;
    nvrtc.GetProgramLogSize(program, &size);
    std::string log(size, '\0');
    if (size) nvrtc.GetProgramLog(program, &log[0]);
    result = std::string(nvrtc.GetErrorString(status)) + "\n" + log;
  } else {
    size_t size = 0;
    nvrtc.GetPTXSize(program, &size);
    ptx->assign(size, '\0');
    nvrtc.GetPTX(program, &(*ptx)[0]);
  }
  nvrtc.DestroyProgram(&program);
  return result;
}

void ExpectCompiles(const StitchCudaKernel& kernel, const std::string& what) {
  std::string ptx;
  const std::string log = CompileToPtx(kernel, &ptx);
  ASSERT_EQ(log, "") << what << "\n" << kernel.source;
  EXPECT_NE(ptx.find(".entry " + kernel.name), std::string::npos) << what;
}

TEST(StitchCudaSource, GeneratedKernelsCompileWithNvrtc) {
  int count = 0;
  for (const char* dtype : {"float", "double", "__half", "__nv_bfloat16"}) {
    const std::vector<int64_t> e3{4, 5, 6};
    ExpectCompiles(
        Generate(kElementwise, e3, {Transposed(e3), Broadcast(e3, {false, true, false}), Contiguous(e3)}, dtype),
        std::string("elementwise ") + dtype);
    ++count;
    const bool wide = std::string(dtype) == "float";  // every shape for float, a few for the others
    for (int64_t cols : {int64_t{1}, int64_t{7}, int64_t{33}, int64_t{768}, int64_t{5000}, int64_t{1000000}}) {
      if (!wide && cols != 7 && cols != 768 && cols != 1000000) continue;
      const int64_t rows = cols >= 5000 ? 3 : 37;
      const std::vector<int64_t> d{rows, cols};
      const std::string shape = " " + std::to_string(rows) + "x" + std::to_string(cols) + " " + dtype;
      ExpectCompiles(Generate(kSoftmax, d, {Contiguous(d)}, dtype), "softmax" + shape);
      ExpectCompiles(
          Generate(kLayerNorm, d, {Transposed(d), Broadcast(d, {false, true}), Broadcast(d, {false, true})}, dtype),
          "layer norm" + shape);
      ExpectCompiles(Generate(kTwoReductions, d, {Contiguous(d)}, dtype), "two reductions" + shape);
      const std::vector<int64_t> d3{rows, 3, (cols + 2) / 3};
      ExpectCompiles(Generate(kKeepdim, d3, {Transposed(d3)}, dtype), "keepdim" + shape);
      count += 4;
    }
  }
  // 64-bit index math.
  ExpectCompiles(Generate(kLayerNorm, {70000, 40000},
                          {Contiguous({70000, 40000}), Broadcast({70000, 40000}, {false, true}),
                           Broadcast({70000, 40000}, {false, true})}),
                 "layer norm 70000x40000");
  // Every op, row and full.
  const char* all_ops =
      "reduce 1; in 0; neg 0; exp 1; log 2; sqrt 2; rsqrt 2; tanh 0; sigmoid 0; relu 0; gelu 0; gelu_tanh 0; abs 0; "
      "reciprocal 2; erf 0; add 3 4; sub 5 6; mul 7 8; div 9 10; max 11 12; min 13 14; pow 15 16; rowsum 17; "
      "rowmean 18; rowmax 19; rowmin 20; pow 22 23; neg 25; exp 26; add 27 24; sigmoid 21; mul 29 0; out 30; outrow 28";
  ExpectCompiles(Generate(all_ops, {5, 300}, {Contiguous({5, 300})}), "all ops");
  ExpectCompiles(Generate(all_ops, {5, 300}, {Contiguous({5, 300})}, "double"), "all ops double");
  EXPECT_GT(count, 30);
}

#else

TEST(StitchCudaSource, GeneratedKernelsCompileWithNvrtc) { GTEST_SKIP() << "built without CUDA (no NVRTC)"; }

#endif  // AUTOGRAPH_WITH_CUDA

}  // namespace
}  // namespace autograph
