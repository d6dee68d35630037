// The CUDA backend's contracts, on small scripted modules (seconds, no zoo model): multi-stream runs
// with events and CUDA Graph replays (the two runs compute-sanitizer checks in
// scripts/gpu_check.sh: CudaSanitizer.*), outputs inside tuples and lists that outlive the next
// replay, callers on two streams, two programs capturing and running side by side, a graph's matmuls
// after the process cleared cuBLAS's workspaces, backends made and dropped while the tensors they
// touched live on, a capture that fails, Merge stages, stitched kernels in the executor and in a
// graph, and the measured cost model with the ios and autograph methods end to end. Each test skips
// without a CUDA device; scripts/gpu_check.sh fails when any test is skipped on a GPU.
#include <gtest/gtest.h>
#include <torch/cuda.h>
#include <torch/script.h>
#include <torch/torch.h>

#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "autograph/optimize.h"
#include "executor/sequential_executor.h"
#include "executor/stage_executor.h"
#include "graph_pass/import_op_graph.h"
#include "graph_pass/lower_module.h"
#include "measure/measured_cost_model.h"
#include "merge/merged_kernel.h"
#include "merge_schedule_util.h"
#include "search/simple_schedulers.h"
#include "small_test_modules.h"
#include "zoo_test_util.h"

#ifdef AUTOGRAPH_WITH_CUDA
#include <ATen/cuda/CUDAContextLight.h>
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAFunctions.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <cuda_runtime.h>

#include "executor/stream_pool.h"
#endif

namespace {

using autograph::testing::BranchyInput;
using autograph::testing::BranchyModule;
using autograph::testing::Flatten;

#ifdef AUTOGRAPH_WITH_CUDA

#define AUTOGRAPH_REQUIRE_CUDA() \
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device here"

// Streams and graphs change when kernels run, not what they compute: the same kernels give the
// same results, so the bound only allows for a library picking another algorithm on another
// stream: |error| <= 1e-5 * max|reference| (+1e-6 for all-zero outputs).
constexpr double kSameKernels = 1e-5;
// Merged convolutions run other cuDNN kernels over zero-padded weights, with TF32 (PyTorch's default
// for cuDNN convolutions): about 1e-3 relative per sum of 36 products; 1e-2 of the output's scale.
constexpr double kOtherKernels = 1e-2;

void ExpectClose(const std::vector<at::Tensor>& got, const std::vector<at::Tensor>& want, double relative,
                 const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i) {
    ASSERT_EQ(got[i].sizes(), want[i].sizes()) << what << " output " << i;
    const double scale = want[i].abs().max().item<double>();
    EXPECT_LE((got[i].to(want[i].device()) - want[i]).abs().max().item<double>(), relative * scale + 1e-6)
        << what << " output " << i;
  }
}

// BranchyModule on the GPU, imported, with the sequential executor's outputs as reference.
struct Branchy {
  torch::jit::Module module;
  autograph::OpGraph graph;
  std::vector<c10::IValue> inputs;

  std::vector<at::Tensor> Reference(const std::vector<c10::IValue>& in) const {
    return Flatten(autograph::SequentialExecutor(graph).Run(in));
  }
};

Branchy MakeBranchy() {
  torch::jit::Module module = BranchyModule();
  module.to(torch::kCUDA);
  std::vector<c10::IValue> inputs = {BranchyInput(2, torch::kCUDA)};
  autograph::OpGraph graph = autograph::ImportOpGraph(autograph::LowerModule(module), inputs);
  return Branchy{std::move(module), std::move(graph), std::move(inputs)};
}

// A schedule with concurrent groups and cross-stream events (the greedy one puts the three
// convolution branches side by side).
autograph::Schedule MultiStream(const autograph::OpGraph& graph) {
  autograph::Schedule schedule = autograph::GreedySchedule(graph, 8);
  const autograph::StagePlan plan(graph, schedule);
  EXPECT_GT(plan.num_streams, 1);
  EXPECT_GT(plan.num_events, 0);
  return schedule;
}

// A scripted module of `source` (a forward), in eval mode.
torch::jit::Module Scripted(const std::string& name, const std::string& source) {
  torch::jit::Module m("__torch__.autograph_test." + name);
  m.register_attribute("training", c10::BoolType::get(), false);
  m.define(source);
  return m;
}

// Run from a non-default stream, as user code often does; the caller's stream is group 0's.
void RunAndCheck(bool cuda_graph, int runs) {
  torch::NoGradGuard no_grad;
  Branchy b = MakeBranchy();
  autograph::StageExecutor executor(b.graph, MultiStream(b.graph), {torch::Device(torch::kCUDA, 0), cuda_graph});
  c10::cuda::CUDAStream stream = c10::cuda::getStreamFromPool(false);
  c10::cuda::CUDAStreamGuard guard(stream);
  for (int run = 0; run < runs; ++run) {
    std::vector<c10::IValue> inputs = {BranchyInput(2, torch::kCUDA)};
    const auto want = b.Reference(inputs);
    const auto got = Flatten(executor.Run(inputs));
    stream.synchronize();
    ExpectClose(got, want, kSameKernels, "run " + std::to_string(run));
  }
}

TEST(CudaSanitizer, MultiStreamEagerRun) {
  AUTOGRAPH_REQUIRE_CUDA();
  RunAndCheck(/*cuda_graph=*/false, 3);
}

TEST(CudaSanitizer, GraphReplay) {
  AUTOGRAPH_REQUIRE_CUDA();
  RunAndCheck(/*cuda_graph=*/true, 3);  // one capture, then replays on new inputs
}

TEST(CudaStageBackend, TupleAndListOutputsOutliveTheNextReplay) {
  AUTOGRAPH_REQUIRE_CUDA();
  torch::NoGradGuard no_grad;
  Branchy b = MakeBranchy();
  autograph::StageExecutor executor(b.graph, MultiStream(b.graph), {torch::Device(torch::kCUDA, 0), true});
  const std::vector<c10::IValue> first = {BranchyInput(2, torch::kCUDA)}, second = {BranchyInput(2, torch::kCUDA)};
  const auto first_out = executor.Run(first);
  const auto second_out = executor.Run(second);
  torch::cuda::synchronize();
  // (sum, (a + 1, [b, c])): four tensors, three of them inside a tuple and a list.
  ASSERT_EQ(Flatten(first_out).size(), 4u);
  ExpectClose(Flatten(first_out), b.Reference(first), kSameKernels, "first replay, after the second");
  ExpectClose(Flatten(second_out), b.Reference(second), kSameKernels, "second replay");
}

// A server's many input shapes: beyond max_cuda_graphs the least recently used graph goes, and the
// memory its capture held with it. Six shapes, twice, against a limit of 2: the memory held stays
// what two graphs hold (flat from the first round to the second), less than with all six kept, and
// every output is right, the recaptured ones too.
TEST(CudaStageBackend, GraphsBeyondMaxCudaGraphsAreReleased) {
  AUTOGRAPH_REQUIRE_CUDA();
  torch::NoGradGuard no_grad;
  Branchy b = MakeBranchy();
  const autograph::Schedule schedule = MultiStream(b.graph);
  auto allocated = [] {
    c10::cuda::device_synchronize();
    return c10::cuda::CUDACachingAllocator::getDeviceStats(0).allocated_bytes[0].current;
  };
  auto serve = [&](int max_graphs) {
    autograph::ExecutorOptions options{torch::Device(torch::kCUDA, 0), /*cuda_graph=*/true};
    options.max_cuda_graphs = max_graphs;
    autograph::StageExecutor executor(b.graph, schedule, options);
    const int64_t before = allocated();
    std::vector<int64_t> held;
    for (int round = 0; round < 2; ++round) {
      for (int64_t batch = 8; batch <= 48; batch += 8) {
        std::vector<c10::IValue> inputs = {BranchyInput(batch, torch::kCUDA)};
        ExpectClose(Flatten(executor.Run(inputs)), b.Reference(inputs), kSameKernels,
                    "max_cuda_graphs " + std::to_string(max_graphs) + ", batch " + std::to_string(batch));
      }
      held.push_back(allocated() - before);
    }
    return held;
  };
  const std::vector<int64_t> bounded = serve(2);
  const std::vector<int64_t> all = serve(16);
  EXPECT_LE(bounded[1], bounded[0]) << "the second round recaptured without releasing";
  EXPECT_LT(bounded[1], all[1]) << "evicted graphs kept their memory";
}

TEST(CudaStageBackend, CallersOnTwoStreams) {
  AUTOGRAPH_REQUIRE_CUDA();
  torch::NoGradGuard no_grad;
  Branchy b = MakeBranchy();
  const autograph::Schedule schedule = MultiStream(b.graph);
  for (bool cuda_graph : {false, true}) {
    autograph::StageExecutor executor(b.graph, schedule, {torch::Device(torch::kCUDA, 0), cuda_graph});
    executor.Run(b.inputs);  // the capture, outside the race
    constexpr int kRuns = 20;
    std::vector<std::vector<c10::IValue>> inputs(2 * kRuns);
    std::vector<std::vector<at::Tensor>> want(inputs.size()), got(inputs.size());
    for (size_t i = 0; i < inputs.size(); ++i) {
      inputs[i] = {BranchyInput(2, torch::kCUDA)};
      want[i] = b.Reference(inputs[i]);
    }
    torch::cuda::synchronize();
    std::vector<std::thread> callers;
    for (int t = 0; t < 2; ++t) {
      callers.emplace_back([&, t] {
        torch::NoGradGuard guard;
        c10::cuda::CUDAStream stream = c10::cuda::getStreamFromPool(false);
        c10::cuda::CUDAStreamGuard on_stream(stream);
        for (int r = 0; r < kRuns; ++r) got[t * kRuns + r] = Flatten(executor.Run(inputs[t * kRuns + r]));
        stream.synchronize();
      });
    }
    for (auto& c : callers) c.join();
    for (size_t i = 0; i < inputs.size(); ++i)
      ExpectClose(got[i], want[i], kSameKernels, std::string(cuda_graph ? "graph" : "eager") + " call " + std::to_string(i));
  }
}

TEST(CudaStageBackend, BackendsComeAndGoWhileTheirTensorsLive) {
  AUTOGRAPH_REQUIRE_CUDA();
  torch::NoGradGuard no_grad;
  Branchy b = MakeBranchy();
  const autograph::Schedule schedule = MultiStream(b.graph);
  const int streams_needed = autograph::StagePlan(b.graph, schedule).num_streams - 1;
  const int streams_before = autograph::StreamPool::Size(0);
  std::vector<std::vector<c10::IValue>> inputs;
  std::vector<std::vector<at::Tensor>> outputs;
  for (int i = 0; i < 100; ++i) {
    autograph::StageExecutor executor(b.graph, schedule, {torch::Device(torch::kCUDA, 0), i % 2 == 1});
    inputs.push_back({BranchyInput(2, torch::kCUDA)});
    outputs.push_back(Flatten(executor.Run(inputs.back())));
  }  // every backend is gone; its inputs, outputs and weights are still alive
  EXPECT_EQ(autograph::StreamPool::Size(0), std::max(streams_before, streams_needed))
      << "backends must reuse the process's side streams";
  // Free the tensors now, then allocate and compute again: the allocator records events on every
  // stream that used the freed blocks, which must still exist.
  for (size_t i = 0; i < outputs.size(); i += 2) {
    outputs[i].clear();
    inputs[i].clear();
  }
  at::Tensor more = torch::randn({1 << 22}, torch::kCUDA);
  (more * 2).sum().item<double>();
  torch::cuda::synchronize();
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
  for (size_t i = 1; i < outputs.size(); i += 20) ExpectClose(outputs[i], b.Reference(inputs[i]), kSameKernels, "kept output");
}

TEST(CudaStageBackend, TwoProgramsCaptureAndRunSideBySide) {
  AUTOGRAPH_REQUIRE_CUDA();
  // Two models served in one process on one GPU: one captures a graph for each new batch size while the
  // other runs eagerly on its side streams all the while. Neither's work may land in the other's capture
  // (a failed capture falls back to eager and says so: counted here) or change its outputs. Inputs are drawn
  // on the CPU: torch's CUDA generator refuses draws from another thread while a capture registered it.
  torch::NoGradGuard no_grad;
  Branchy b = MakeBranchy();
  const autograph::Schedule schedule = MultiStream(b.graph);
  autograph::StageExecutor captured(b.graph, schedule, {torch::Device(torch::kCUDA, 0), true});
  autograph::StageExecutor eager(b.graph, schedule, {torch::Device(torch::kCUDA, 0), false});
  struct Warnings : c10::WarningHandler {
    std::vector<std::string> messages;
    void process(const c10::Warning& w) override { messages.push_back(w.msg()); }
  };
  std::atomic<bool> done{false};
  std::vector<std::string> capture_warnings;
  std::thread capturing([&] {
    torch::NoGradGuard no_grad_here;
    Warnings warnings;
    c10::WarningUtils::WarningHandlerGuard handler(&warnings);  // this thread's
    c10::cuda::CUDAStream stream = c10::cuda::getStreamFromPool(false);
    c10::cuda::CUDAStreamGuard guard(stream);
    for (int round = 0; round < 2; ++round) {
      for (int batch = 1; batch <= 6; ++batch) {
        std::vector<c10::IValue> inputs = {BranchyInput(batch, torch::kCPU).to(torch::kCUDA)};
        const auto want = b.Reference(inputs);
        const auto got = Flatten(captured.Run(inputs));
        stream.synchronize();
        ExpectClose(got, want, kSameKernels, "captured, batch " + std::to_string(batch));
      }
    }
    capture_warnings = warnings.messages;
    done = true;
  });
  int eager_runs = 0;
  std::thread running([&] {
    torch::NoGradGuard no_grad_here;
    c10::cuda::CUDAStream stream = c10::cuda::getStreamFromPool(false);
    c10::cuda::CUDAStreamGuard guard(stream);
    while (!done || eager_runs < 4) {
      std::vector<c10::IValue> inputs = {BranchyInput(2, torch::kCPU).to(torch::kCUDA)};
      const auto want = b.Reference(inputs);
      const auto got = Flatten(eager.Run(inputs));
      stream.synchronize();
      ExpectClose(got, want, kSameKernels, "eager run " + std::to_string(eager_runs++));
    }
  });
  capturing.join();
  running.join();
  for (const std::string& w : capture_warnings)
    EXPECT_EQ(w.find("capturing a CUDA Graph failed"), std::string::npos) << w;
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
}

TEST(CudaStageBackend, AGraphsMatmulsKeepTheirWorkspaceWhenTheProcessClearsCublas) {
  AUTOGRAPH_REQUIRE_CUDA();
  // torch.compile's CUDA Graph trees clear cuBLAS's workspaces around every recording. A captured graph
  // whose matmuls wrote the shared workspace would then write memory the allocator hands to others:
  // here, filler tensors made right after the clear, which must keep their values, while the graph's
  // outputs stay right.
  torch::NoGradGuard no_grad;
  const torch::jit::Module m = Scripted("Matmuls", R"JIT(
def forward(self, x, w):
    return torch.relu(torch.mm(x, w)) + torch.sigmoid(torch.mm(w.t(), x.t()).t())
)JIT");
  auto make = [] {
    return std::vector<c10::IValue>{torch::randn({256, 512}).to(torch::kCUDA),
                                    torch::randn({512, 256}).to(torch::kCUDA)};
  };
  std::vector<c10::IValue> inputs = make();
  const autograph::OpGraph graph = autograph::ImportOpGraph(autograph::LowerModule(m), inputs);
  autograph::StageExecutor executor(graph, autograph::GreedySchedule(graph, 4), {torch::Device(torch::kCUDA, 0), true});
  c10::cuda::CUDAStream stream = c10::cuda::getStreamFromPool(false);
  c10::cuda::CUDAStreamGuard guard(stream);
  executor.Run(inputs);  // captured
  at::cuda::clearCublasWorkspaces();
  std::vector<at::Tensor> fillers;
  for (int i = 0; i < 32; ++i) fillers.push_back(torch::full({1 << 19}, 7.0f, torch::kCUDA));  // 2 MiB each
  for (int run = 0; run < 3; ++run) {
    inputs = make();
    const auto want = Flatten(autograph::SequentialExecutor(graph).Run(inputs));
    const auto got = Flatten(executor.Run(inputs));
    stream.synchronize();
    ExpectClose(got, want, kSameKernels, "replay " + std::to_string(run) + " after the workspaces were cleared");
  }
  for (const at::Tensor& f : fillers) EXPECT_TRUE(f.eq(7.0f).all().item<bool>()) << "a replay wrote freed memory";
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
}

TEST(CudaStageBackend, FailedCaptureEndsTheCaptureAndRunsEagerly) {
  AUTOGRAPH_REQUIRE_CUDA();
  torch::NoGradGuard no_grad;
  // nonzero must read its result's size on the host: it cannot be captured.
  const torch::jit::Module m = Scripted("Synchronizing", R"JIT(
def forward(self, x):
    y = torch.relu(x)
    z = torch.sigmoid(x)
    return torch.nonzero(y).sum() + z.sum()
)JIT");
  std::vector<c10::IValue> inputs = {torch::randn({64}, torch::kCUDA)};
  const autograph::OpGraph graph = autograph::ImportOpGraph(autograph::LowerModule(m), inputs);
  autograph::StageExecutor executor(graph, autograph::GreedySchedule(graph, 4), {torch::Device(torch::kCUDA, 0), true});
  c10::cuda::CUDAStream stream = c10::cuda::getStreamFromPool(false);
  c10::cuda::CUDAStreamGuard guard(stream);
  for (int run = 0; run < 2; ++run) {
    inputs = {torch::randn({64}, torch::kCUDA)};
    const auto want = Flatten(autograph::SequentialExecutor(graph).Run(inputs));
    const auto got = Flatten(executor.Run(inputs));
    ExpectClose(got, want, kSameKernels, "eager after the failed capture, run " + std::to_string(run));
  }
  cudaStreamCaptureStatus status;
  ASSERT_EQ(cudaStreamIsCapturing(stream.stream(), &status), cudaSuccess);
  EXPECT_EQ(status, cudaStreamCaptureStatusNone);
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
  // Memory and captures still work afterwards.
  at::Tensor big = torch::ones({1 << 24}, torch::kCUDA);
  EXPECT_EQ(big.sum().item<double>(), static_cast<double>(1 << 24));
  RunAndCheck(/*cuda_graph=*/true, 2);
}

TEST(CudaStageBackend, MergeStagesMatchOnCuda) {
  AUTOGRAPH_REQUIRE_CUDA();
  torch::NoGradGuard no_grad;
  Branchy b = MakeBranchy();
  const auto classes = autograph::MergeableClasses(b.graph);
  ASSERT_FALSE(classes.empty()) << "the three sibling convolutions form a merge class";
  const autograph::Schedule schedule = autograph::testing::ScheduleWithMergeStages(b.graph, classes, 4);
  for (bool cuda_graph : {false, true}) {
    autograph::StageExecutor executor(b.graph, schedule, {torch::Device(torch::kCUDA, 0), cuda_graph});
    ASSERT_FALSE(executor.plan().merged.empty());
    for (int run = 0; run < 2; ++run) {
      std::vector<c10::IValue> inputs = {BranchyInput(2, torch::kCUDA)};
      ExpectClose(Flatten(executor.Run(inputs)), b.Reference(inputs), kOtherKernels,
                  std::string(cuda_graph ? "graph" : "eager") + " run " + std::to_string(run));
    }
  }
}

// Elementwise chains, a softmax and a broadcast: what the stitch pass turns into stitched kernels.
torch::jit::Module MemoryBoundModule() {
  torch::jit::Module m("__torch__.autograph_test.MemoryBound");
  m.register_attribute("training", c10::BoolType::get(), false);
  m.register_parameter("scale", torch::rand({64}) + 0.5, false);
  m.define(R"JIT(
def forward(self, x):
    y = torch.sigmoid(x) * x + 1.0
    z = torch.tanh(y) - y * self.scale
    return torch.softmax(z, -1), (y * 2.0).relu()
)JIT");
  return m;
}

TEST(CudaStageBackend, StitchedKernelsRunInTheExecutorAndInAGraph) {
  AUTOGRAPH_REQUIRE_CUDA();
  torch::NoGradGuard no_grad;
  torch::jit::Module m = MemoryBoundModule();
  const at::Tensor x = torch::randn({8, 64});
  m.to(torch::kCUDA);
  for (bool cuda_graph : {false, true}) {
    autograph::OptimizeOptions options;
    options.example_inputs = {x};
    options.executor.device = torch::kCUDA;
    options.executor.cuda_graph = cuda_graph;
    options.substitutions.stitch = true;
    options.substitutions.check_rewrites = false;  // the stitched kernels in the executor, whether or not they pay here
    options.search.method = "greedy";
    autograph::OptimizeReport report;
    torch::jit::Module optimized = autograph::optimize(m, options, &report);
    EXPECT_GT(report.stitch_groups, 0);
    for (int run = 0; run < 2; ++run) {
      const at::Tensor in = torch::randn({8, 64}, torch::kCUDA);
      // Generated kernels use the same formulas in another order (and expf): 1e-5 of the scale.
      ExpectClose(Flatten({optimized.forward({in})}), Flatten({m.forward({in})}), 1e-5,
                  std::string(cuda_graph ? "graph" : "eager") + " run " + std::to_string(run));
    }
  }
}

TEST(CudaMeasuredCostModel, TimesStagesTheWayTheProgramRuns) {
  AUTOGRAPH_REQUIRE_CUDA();
  torch::NoGradGuard no_grad;
  Branchy b = MakeBranchy();
  // One group of every operator: many small kernels, where a replay saves the launch gaps.
  autograph::Stage all{autograph::StageStrategy::Concurrent, {{}}};
  for (int op = 0; op < b.graph.size(); ++op) all.groups[0].push_back(op);
  double ms[2];
  for (bool cuda_graph : {false, true}) {
    autograph::MeasuredCostOptions options;
    options.device = torch::kCUDA;
    options.cuda_graph = cuda_graph;
    options.cache_path = "none";
    options.repeats = 20;
    autograph::MeasuredCostModel cost(b.graph, b.inputs, options);
    ms[cuda_graph] = cost.StageMs(b.graph, all);
    EXPECT_GT(ms[cuda_graph], 0);
    EXPECT_EQ(cost.measurements(), 1);
  }
  EXPECT_LT(ms[1], ms[0]) << "a replayed stage pays no launch gaps: graph " << ms[1] << " ms, eager " << ms[0] << " ms";
}

TEST(CudaOptimize, MeasuredIosAndAutographMatchTheModel) {
  AUTOGRAPH_REQUIRE_CUDA();
  torch::NoGradGuard no_grad;
  torch::jit::Module m = BranchyModule();
  m.to(torch::kCUDA);
  for (const std::string method : {"ios", "autograph"}) {
    autograph::OptimizeOptions options;
    options.example_inputs = {BranchyInput(2)};
    options.executor.device = torch::kCUDA;
    options.executor.cuda_graph = true;
    options.search.method = method;
    options.cost.model = "measured";
    options.cost.cache = "none";
    autograph::OptimizeReport report;
    torch::jit::Module optimized = autograph::optimize(m, options, &report);
    EXPECT_GT(report.stages_measured, 0) << method;
    if (method == "autograph") {
      EXPECT_GT(report.candidates_verified, 0);
      EXPECT_GT(report.measured_ms, 0);
    }
    for (int run = 0; run < 2; ++run) {
      const at::Tensor in = BranchyInput(2, torch::kCUDA);
      ExpectClose(Flatten({optimized.forward({in})}), Flatten({m.forward({in})}), kOtherKernels,
                  method + " run " + std::to_string(run));
    }
  }
}

#endif  // AUTOGRAPH_WITH_CUDA

}  // namespace
