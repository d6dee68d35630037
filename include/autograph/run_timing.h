#pragma once
// Timing runs of a piece of work on a device, and the robust statistics of the samples. Shared by the
// measured cost model (one stage) and TimeSchedule (a whole schedule), so both time the same way:
// on CPU a steady clock around each run; on CUDA a pair of events recorded on the current stream
// around each run, waited for before the next, so a sample is the device time the run spans
// (kernels, and host launch gaps when the host is the bottleneck).
#include <c10/core/Device.h>

#include <functional>
#include <vector>

namespace autograph {

// Calls prepare() then run() warmup + repeats times and returns the repeats' times in ms. prepare()
// is outside the timed span (fresh copies of inputs that a run mutates, ...). Throws Error when
// repeats < 1, warmup < 0, or a CUDA device is asked for in a build or on a host without CUDA.
std::vector<double> TimeRuns(c10::Device device, int warmup, int repeats, const std::function<void()>& prepare,
                             const std::function<void()>& run);

// Mean of the fastest ceil(fraction * n) samples (at least one): robust to the slow outliers that
// preemption and frequency changes add (the statistic of IOS's C++ port). fraction in (0, 1].
double RobustMs(std::vector<double> samples, double fraction);
// Linear interpolation between the closest ranks; q in [0, 1].
double PercentileMs(std::vector<double> samples, double q);

}  // namespace autograph
