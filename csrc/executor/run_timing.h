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
// is outside the timed span (fresh copies of inputs that a run mutates, ...). With flush_l2 on CUDA,
// a buffer twice the size of the device's L2 cache is overwritten before every run, also outside
// the timed span: a piece of work timed alone over and over would otherwise find its weights and
// inputs in L2, which it does not when it runs among the rest of a model (an H100's L2 is 50 MB).
// No-op on CPU. Throws Error when repeats < 1, warmup < 0, or a CUDA device is asked for in a build
// or on a host without CUDA.
std::vector<double> TimeRuns(c10::Device device, int warmup, int repeats, const std::function<void()>& prepare,
                             const std::function<void()>& run, bool flush_l2 = false);

// When a piece side by side with others stops being timed: once every piece has `after_rounds`
// samples, one whose fastest sample is slower than the lowest median among the pieces by more than
// `margin` (a fraction) runs no more rounds. Its fastest run is then slower than the leader's typical
// one, so more samples would not make it the fastest by RobustMs or by median; the time they would
// take goes. And when the medians of the pieces left are all within `tie` (a fraction) of the lowest,
// the timing stops: more rounds would only choose among ties; so it does when one piece is left.
// after_rounds 0: every piece runs every round.
struct Racing {
  int after_rounds = 0;
  double margin = 0.05;
  double tie = 0.01;
};

// The racing decision after a round, given every piece's samples so far: clears racing_on[i] for
// each piece `racing` drops and returns whether the timing stops (ties, or one piece left). Apart
// from the timing so that the decision is tested on given samples, not on a loaded machine's clock.
bool RacingStopsAfterRound(const std::vector<std::vector<double>>& samples, std::vector<bool>& racing_on,
                           const Racing& racing);

// Several pieces of work timed side by side: each is warmed up `warmup` times, then `rounds` rounds
// run each once in turn, so that drift in the machine's speed (clock changes, other load) falls on
// all of them alike. Returns each piece's samples in ms, in the order of `runs`: `rounds` of them, or
// fewer for a piece `racing` dropped. prepare(i) runs before every run of piece i, outside the timed
// span.
std::vector<std::vector<double>> TimeRunsSideBySide(c10::Device device, int warmup, int rounds,
                                                    const std::vector<std::function<void()>>& runs,
                                                    const std::function<void(size_t)>& prepare = nullptr,
                                                    Racing racing = {});

// Mean of the fastest ceil(fraction * n) samples (at least one): robust to the slow outliers that
// preemption and frequency changes add (the statistic of IOS's C++ port). fraction in (0, 1].
double RobustMs(std::vector<double> samples, double fraction);
// Linear interpolation between the closest ranks; q in [0, 1].
double PercentileMs(std::vector<double> samples, double q);

}  // namespace autograph
