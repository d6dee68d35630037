// CUDA backend tests. They are registered only where a CUDA device is present (GPU machines);
// elsewhere the binary says so in one line, and the CPU tests cover the shared planning code.
#include <gtest/gtest.h>
#include <torch/cuda.h>
#include <torch/script.h>
#include <torch/torch.h>

#ifdef AUTOGRAPH_WITH_CUDA
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#endif

#include <iostream>
#include <thread>

#include "autograph/model_loading.h"
#include "autograph/optimize.h"
#include "executor/sequential_executor.h"
#include "executor/stage_executor.h"
#include "graph_pass/import_op_graph.h"
#include "graph_pass/lower_module.h"
#include "search/simple_schedulers.h"
#include "zoo_test_util.h"

namespace {

using autograph::testing::Flatten;

#ifdef AUTOGRAPH_WITH_CUDA

// Streams change when kernels run, not what they compute, and cuDNN picks the same algorithm for
// the same shapes in one process: results should be identical. The bound allows for a library
// choosing another algorithm on another stream: |error| <= 1e-5 * max|reference|.
void ExpectClose(const std::vector<at::Tensor>& got, const std::vector<at::Tensor>& want, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i) {
    double scale = want[i].abs().max().item<double>();
    EXPECT_LE((got[i] - want[i]).abs().max().item<double>(), 1e-5 * scale + 1e-6) << what << " output " << i;
  }
}

class CudaZooTest : public ::testing::Test {
 public:
  explicit CudaZooTest(std::string model) : model_(std::move(model)) {}

  void TestBody() override {
    torch::NoGradGuard no_grad;
    const std::string path = autograph::testing::ZooModel(model_);
    torch::jit::Module module = autograph::LoadModule(path);
    module.to(torch::kCUDA);
    auto inputs = autograph::MakeExampleInputs(autograph::ReadInputSpecs(*autograph::InputSpecPathFor(path)), torch::kCUDA);
    autograph::OpGraph graph = autograph::ImportOpGraph(autograph::LowerModule(module), inputs);
    auto reference = Flatten(autograph::SequentialExecutor(graph).Run(inputs));

    // Random multi-stream schedules, eager and under CUDA Graphs, called on a non-default stream.
    auto side = c10::cuda::getStreamFromPool(false);
    c10::cuda::CUDAStreamGuard on_side(side);
    for (uint64_t seed = 1; seed <= 4; ++seed) {
      auto schedule = autograph::RandomSchedule(graph, seed, 8);
      for (bool capture : {false, true}) {
        autograph::StageExecutor executor(graph, schedule, {torch::Device(torch::kCUDA, 0), capture});
        for (int repeat = 0; repeat < 2; ++repeat) {  // the second replay reuses the capture
          auto outputs = Flatten(executor.Run(inputs));
          side.synchronize();
          ExpectClose(outputs, reference, "seed " + std::to_string(seed) + (capture ? " graph" : " eager"));
        }
      }
    }

    // The optimized module from 8 threads at once.
    autograph::OptimizeOptions options;
    options.example_inputs = autograph::MakeExampleInputs(autograph::ReadInputSpecs(*autograph::InputSpecPathFor(path)));
    options.executor.device = torch::kCUDA;
    // The executor on the graph as lowered, eagerly: no search, rewrites or CUDA Graph (tested elsewhere).
    options.search.method = "greedy";
    options.executor.cuda_graph = false;
    options.substitutions.fuse_attention = options.substitutions.merge_linears = options.substitutions.regroup_convolutions = options.substitutions.fold_conv_relu = false;
    options.substitutions.stitch = false;
    torch::jit::Module optimized = autograph::optimize(module, options);
    std::vector<std::vector<at::Tensor>> results(8);
    std::vector<std::thread> threads;
    for (int t = 0; t < 8; ++t) {
      threads.emplace_back([&, t] {
        torch::NoGradGuard guard;
        results[t] = Flatten({optimized.forward(inputs)});
        torch::cuda::synchronize();
      });
    }
    for (auto& th : threads) th.join();
    for (int t = 0; t < 8; ++t) ExpectClose(results[t], reference, "thread " + std::to_string(t));
  }

 private:
  std::string model_;
};

const bool kRegistered = [] {
  if (!torch::cuda::is_available()) {
    std::cerr << "autograph_tests: no CUDA device here, CUDA backend tests not registered\n";
    return false;
  }
  for (const char* model : {"inception_v3", "resnet50", "nasnet_a_mobile", "randwire", "bert_base", "rnntc_sru"}) {
    ::testing::RegisterTest("CudaStageExecutor", model, nullptr, nullptr, __FILE__, __LINE__,
                            [model]() -> ::testing::Test* { return new CudaZooTest(model); });
  }
  return true;
}();

#endif  // AUTOGRAPH_WITH_CUDA

}  // namespace
