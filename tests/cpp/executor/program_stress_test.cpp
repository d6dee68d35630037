// Many threads share optimized programs for long: 8 threads call programs of several schedules
// (three random ones and Nimble's) on several inputs, every output is checked against sequential
// execution, and the process's resident memory must not grow between the first fifth of the calls
// and the end. Quick here (AUTOGRAPH_STRESS_CALLS, default 20 calls per thread and model);
// scripts/stress.sh runs 10,000 per thread and records the figures.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "autograph/model_loading.h"
#include "executor/program.h"
#include "executor/sequential_executor.h"
#include "graph_pass/import_op_graph.h"
#include "graph_pass/lower_module.h"
#include "search/nimble_schedule.h"
#include "search/simple_schedulers.h"
#include "zoo_test_util.h"

namespace {

using autograph::testing::ZooModel;

int64_t ResidentKiB() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line))
    if (line.rfind("VmRSS:", 0) == 0) return std::stoll(line.substr(6));
  return -1;
}

int CallsPerThread() {
  const char* env = std::getenv("AUTOGRAPH_STRESS_CALLS");
  return env ? std::max(5, std::atoi(env)) : 20;
}

struct StressCase {
  std::string name;
  std::vector<int64_t> shape;  // first input's shape: small, so that many calls fit
};
std::ostream& operator<<(std::ostream& os, const StressCase& c) { return os << c.name; }

class ProgramStress : public ::testing::TestWithParam<StressCase> {};

TEST_P(ProgramStress, ThreadsShareProgramsWithoutMismatchOrGrowth) {
  const StressCase& c = GetParam();
  torch::NoGradGuard no_grad;
  const std::string path = ZooModel(c.name);
  auto specs = autograph::ReadInputSpecs(*autograph::InputSpecPathFor(path));
  specs[0].shape = c.shape;
  std::vector<std::vector<c10::IValue>> inputs;
  for (uint64_t seed = 0; seed < 4; ++seed) inputs.push_back(autograph::MakeExampleInputs(specs, c10::kCPU, seed));
  const autograph::OpGraph graph =
      autograph::ImportOpGraph(autograph::LowerModule(autograph::LoadModule(path)), inputs[0]);
  std::vector<std::vector<at::Tensor>> references;
  for (const auto& in : inputs) references.push_back(autograph::testing::Flatten(autograph::SequentialExecutor(graph).Run(in)));

  const std::vector<autograph::InputSignature> signature = autograph::InputSignaturesOf(inputs[0]);
  std::vector<c10::intrusive_ptr<autograph::Program>> programs;
  for (uint64_t seed = 1; seed <= 3; ++seed)
    programs.push_back(c10::make_intrusive<autograph::Program>(graph, autograph::RandomSchedule(graph, seed, 1 + seed % 4),
                                                               signature, autograph::ExecutorOptions{c10::kCPU, false}));
  programs.push_back(c10::make_intrusive<autograph::Program>(graph, autograph::NimbleSchedule(graph, 8), signature,
                                                             autograph::ExecutorOptions{c10::kCPU, false}));

  const int threads = 8, calls = CallsPerThread(), first_part = std::max(1, calls / 5);
  std::atomic<int> mismatches{0}, done_first_part{0}, completed{0};
  std::atomic<int64_t> resident_after_first_part{-1};
  // Concurrent groups share intra-op threads differently from the sequential run: float
  // reassociation, ~1e-6 relative per layer; 1e-4 of the output's scale bounds it and still catches a
  // wrong or missing operator or a value overwritten by another call.
  auto worker = [&](int t) {
    for (int i = 0; i < calls; ++i) {
      if (i == first_part && ++done_first_part == threads) resident_after_first_part = ResidentKiB();
      const size_t k = static_cast<size_t>(t * 7 + i) % inputs.size();
      const c10::IValue out = programs[static_cast<size_t>(t + i) % programs.size()]->Call(inputs[k]);
      const std::vector<at::Tensor> got = autograph::testing::Flatten({out});
      bool same = got.size() == references[k].size();
      for (size_t o = 0; same && o < got.size(); ++o) {
        const double scale = std::max(1.0, references[k][o].abs().max().item<double>());
        same = (got[o] - references[k][o]).abs().max().item<double>() <= 1e-4 * scale;
      }
      if (!same) ++mismatches;
      ++completed;
    }
  };
  const auto start = std::chrono::steady_clock::now();
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) pool.emplace_back(worker, t);
  for (std::thread& th : pool) th.join();
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const int64_t resident_end = ResidentKiB();
  const int64_t growth = resident_end - resident_after_first_part.load();
  std::cout << "stress " << c.name << ": " << threads << " threads x " << calls << " calls, " << programs.size()
            << " schedules, " << completed.load() << " calls in " << seconds << " s, " << mismatches.load()
            << " mismatches, resident " << resident_after_first_part.load() / 1024 << " MiB after the first fifth, "
            << resident_end / 1024 << " MiB at the end (" << growth / 1024 << " MiB growth)" << std::endl;
  EXPECT_EQ(completed.load(), threads * calls);
  EXPECT_EQ(mismatches.load(), 0);
  // Growth is judged on long runs only: a few dozen calls may still be filling allocator caches. The
  // bound: 64 MiB or 10 % of what the process held, whichever is larger (allocator arenas of 8 threads).
  if (calls >= 1000) EXPECT_LE(growth, std::max<int64_t>(64 * 1024, resident_after_first_part.load() / 10));
}

INSTANTIATE_TEST_SUITE_P(Zoo, ProgramStress,
                         ::testing::Values(StressCase{"squeezenet", {1, 3, 64, 64}}, StressCase{"rnntc_sru", {1, 20}},
                                           StressCase{"bert_base", {1, 8}}),
                         [](const ::testing::TestParamInfo<StressCase>& info) { return info.param.name; });

}  // namespace
