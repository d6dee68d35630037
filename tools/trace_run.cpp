// --trace: one run of a module under PyTorch's profiler (Kineto), saved as a Chrome / Perfetto trace.
// Every ATen operator appears with its real start and end on the thread that ran it (a CPU stage's
// groups run on several threads) and, on CUDA, every kernel on its stream.
#include <torch/csrc/autograd/profiler_kineto.h>
#include <torch/cuda.h>
#include <torch/script.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>

#include "autograph/error.h"
#include "commands.h"

namespace autograph::cli {

void WriteTrace(torch::jit::Module& module, const std::vector<c10::IValue>& inputs, c10::Device device,
                const std::string& path) {
  namespace profiler = torch::autograd::profiler;
  using torch::profiler::impl::ActivityType;
  using torch::profiler::impl::ProfilerConfig;
  using torch::profiler::impl::ProfilerState;
  auto run = [&] {
    module.forward(inputs);
    if (device.is_cuda()) torch::cuda::synchronize();
  };
  {
    // The profiler only logs a file it cannot write: find out first.
    std::ofstream probe(path);
    if (!probe) throw Error("cannot write the trace '" + path + "': " + std::strerror(errno));
  }
  for (int i = 0; i < 3; ++i) run();  // warm: first-run allocations and lazy initialization stay out
  const ProfilerConfig config(ProfilerState::KINETO);
  std::set<ActivityType> activities{ActivityType::CPU};
  if (device.is_cuda()) activities.insert(ActivityType::CUDA);
  profiler::prepareProfiler(config, activities);
  profiler::enableProfiler(config, activities);
  try {
    run();
  } catch (...) {
    profiler::disableProfiler();
    throw;
  }
  std::unique_ptr<profiler::ProfilerResult> result = profiler::disableProfiler();
  try {
    result->save(path);
  } catch (const std::exception& e) {
    throw Error("cannot write the trace '" + path + "': " + FirstLineOf(e));
  }
  std::error_code ec;
  if (std::filesystem::file_size(path, ec) == 0 || ec)
    throw Error("the profiler wrote no trace to '" + path + "' (is there room on the disk?)");
}

}  // namespace autograph::cli
