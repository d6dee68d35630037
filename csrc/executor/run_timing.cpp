// Timing runs on CPU (steady clock) and CUDA (events on the current stream); see run_timing.h.
#include "executor/run_timing.h"

#include <ATen/ATen.h>
#include <ATen/Context.h>

#include <algorithm>
#include <limits>
#include <chrono>
#include <cmath>
#include <string>

#include "autograph/error.h"

#ifdef AUTOGRAPH_WITH_CUDA
#include <ATen/cuda/CUDAContext.h>
#include <ATen/cuda/CUDAEvent.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#endif

namespace autograph {

namespace {

std::vector<double> TimeOnCpu(int warmup, int repeats, const std::function<void()>& prepare,
                              const std::function<void()>& run) {
  for (int i = 0; i < warmup; ++i) {
    prepare();
    run();
  }
  std::vector<double> ms;
  ms.reserve(repeats);
  for (int i = 0; i < repeats; ++i) {
    prepare();
    const auto start = std::chrono::steady_clock::now();
    run();
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
  }
  return ms;
}

std::vector<double> TimeOnCuda(c10::Device device, int warmup, int repeats, const std::function<void()>& prepare,
                               const std::function<void()>& run, bool flush_l2) {
#ifdef AUTOGRAPH_WITH_CUDA
  if (!at::hasCUDA()) throw Error("timing on " + device.str() + ": no CUDA device is available here; use --device cpu");
  c10::cuda::OptionalCUDAGuard guard;
  if (device.has_index()) guard.set_device(device);
  at::Tensor flush;
  if (flush_l2) {
    const int64_t l2 = at::cuda::getCurrentDeviceProperties()->l2CacheSize;
    flush = at::empty({std::max<int64_t>(2 * l2, 1 << 20)}, at::TensorOptions().dtype(at::kByte).device(at::kCUDA));
  }
  auto before_run = [&] {
    prepare();
    if (flush.defined()) flush.fill_(1);  // enqueued before the start event: not timed
  };
  for (int i = 0; i < warmup; ++i) {
    before_run();
    run();
  }
  c10::cuda::getCurrentCUDAStream().synchronize();
  std::vector<double> ms;
  ms.reserve(repeats);
  for (int i = 0; i < repeats; ++i) {
    before_run();
    // Read the stream after prepare(): the executor forks from and joins into whatever is current.
    const c10::cuda::CUDAStream stream = c10::cuda::getCurrentCUDAStream();
    at::cuda::CUDAEvent start(cudaEventDefault), end(cudaEventDefault);
    start.record(stream);
    run();
    end.record(stream);
    end.synchronize();
    ms.push_back(start.elapsed_time(end));
  }
  return ms;
#else
  throw Error("timing on " + device.str() + ": autograph was built without CUDA; use --device cpu");
#endif
}

}  // namespace

std::vector<double> TimeRuns(c10::Device device, int warmup, int repeats, const std::function<void()>& prepare,
                             const std::function<void()>& run, bool flush_l2) {
  if (repeats < 1) throw Error("timing needs at least one repeat; got " + std::to_string(repeats));
  if (warmup < 0) throw Error("warm-up runs cannot be negative; got " + std::to_string(warmup));
  if (device.is_cuda()) return TimeOnCuda(device, warmup, repeats, prepare, run, flush_l2);
  if (device.is_cpu()) return TimeOnCpu(warmup, repeats, prepare, run);
  throw Error("cannot time on device '" + device.str() + "': autograph runs on cpu and cuda");
}

bool RacingStopsAfterRound(const std::vector<std::vector<double>>& samples, std::vector<bool>& racing_on,
                           const Racing& racing) {
  double lowest_median = std::numeric_limits<double>::infinity();
  for (size_t i = 0; i < samples.size(); ++i)
    if (racing_on[i]) lowest_median = std::min(lowest_median, PercentileMs(samples[i], 0.5));
  bool tied = true;
  size_t left = 0;
  for (size_t i = 0; i < samples.size(); ++i) {
    if (!racing_on[i]) continue;
    if (*std::min_element(samples[i].begin(), samples[i].end()) > lowest_median * (1 + racing.margin)) {
      racing_on[i] = false;
      continue;
    }
    ++left;
    tied = tied && PercentileMs(samples[i], 0.5) <= lowest_median * (1 + racing.tie);
  }
  return tied || left <= 1;  // ties, or the one left: more rounds would decide nothing
}

std::vector<std::vector<double>> TimeRunsSideBySide(c10::Device device, int warmup, int rounds,
                                                    const std::vector<std::function<void()>>& runs,
                                                    const std::function<void(size_t)>& prepare, Racing racing) {
  if (rounds < 1) throw Error("timing needs at least one round; got " + std::to_string(rounds));
  if (warmup < 0) throw Error("warm-up runs cannot be negative; got " + std::to_string(warmup));
  auto prepare_for = [&](size_t i) { return std::function<void()>([&prepare, i] { if (prepare) prepare(i); }); };
  for (size_t i = 0; i < runs.size(); ++i)
    if (warmup > 0) TimeRuns(device, warmup - 1, 1, prepare_for(i), runs[i]);
  std::vector<std::vector<double>> samples(runs.size());
  std::vector<bool> racing_on(runs.size(), true);
  for (int r = 0; r < rounds; ++r) {
    for (size_t i = 0; i < runs.size(); ++i)
      if (racing_on[i]) samples[i].push_back(TimeRuns(device, 0, 1, prepare_for(i), runs[i])[0]);
    if (racing.after_rounds <= 0 || r + 1 < racing.after_rounds || runs.size() < 2) continue;
    if (RacingStopsAfterRound(samples, racing_on, racing)) break;
  }
  return samples;
}

double RobustMs(std::vector<double> samples, double fraction) {
  if (samples.empty()) throw Error("robust statistic of no samples");
  if (!(fraction > 0 && fraction <= 1))
    throw Error("fastest_fraction is " + std::to_string(fraction) + "; expected a fraction in (0, 1]");
  std::sort(samples.begin(), samples.end());
  const size_t n = std::clamp<size_t>(static_cast<size_t>(std::ceil(fraction * samples.size())), 1, samples.size());
  double sum = 0;
  for (size_t i = 0; i < n; ++i) sum += samples[i];
  return sum / static_cast<double>(n);
}

double PercentileMs(std::vector<double> samples, double q) {
  if (samples.empty()) throw Error("percentile of no samples");
  std::sort(samples.begin(), samples.end());
  const double pos = std::clamp(q, 0.0, 1.0) * static_cast<double>(samples.size() - 1);
  const size_t lo = static_cast<size_t>(pos);
  const size_t hi = std::min(lo + 1, samples.size() - 1);
  return samples[lo] + (pos - lo) * (samples[hi] - samples[lo]);
}

}  // namespace autograph
