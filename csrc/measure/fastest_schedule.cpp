#include "measure/fastest_schedule.h"

#include <ATen/core/grad_mode.h>

#include <memory>

#include "autograph/error.h"
#include "executor/run_timing.h"
#include "executor/stage_executor.h"
#include "executor/validate_schedule.h"
#include "measure/extract_stage.h"

namespace autograph {

size_t FastestSchedule(const OpGraph& graph, const std::vector<ScheduleCandidate>& candidates,
                       const std::vector<c10::IValue>& inputs, c10::Device device,
                       const FastestScheduleOptions& options, std::vector<CandidateTiming>* timings) {
  if (candidates.empty()) throw Error("no candidate schedule to verify");
  at::NoGradGuard no_grad;
  std::vector<std::unique_ptr<StageExecutor>> executors;
  for (const ScheduleCandidate& c : candidates) {
    ValidateSchedule(c.schedule, graph);
    executors.push_back(std::make_unique<StageExecutor>(graph, c.schedule, ExecutorOptions{device, options.cuda_graph}));
  }
  // Inputs the graph writes in place get a fresh copy before every run (outside the timed span).
  const std::vector<bool> mutated = InputsWrittenInPlace(graph);
  std::vector<c10::IValue> run_inputs;
  auto prepare = [&](size_t) {
    run_inputs = inputs;
    for (size_t i = 0; i < run_inputs.size() && i < mutated.size(); ++i)
      if (mutated[i]) run_inputs[i] = inputs[i].deepcopy();
  };
  std::vector<std::function<void()>> runs;
  for (auto& executor : executors) runs.push_back([&run_inputs, e = executor.get()] { e->Run(std::move(run_inputs)); });
  const int warmup = options.cuda_graph ? std::max(options.warmup, 1) : options.warmup;  // a capture is no sample
  const std::vector<std::vector<double>> samples =
      TimeRunsSideBySide(device, warmup, options.rounds, runs, prepare, Racing{options.race_after});
  size_t fastest = 0;
  std::vector<CandidateTiming> local;
  for (size_t i = 0; i < candidates.size(); ++i) {
    CandidateTiming t{candidates[i].name, candidates[i].predicted_ms, RobustMs(samples[i], options.fastest_fraction),
                      PercentileMs(samples[i], 0.5), PercentileMs(samples[i], 0.9)};
    if (i > 0 && t.measured_ms < local[fastest].measured_ms) fastest = i;
    local.push_back(std::move(t));
  }
  if (timings) *timings = std::move(local);
  return fastest;
}

}  // namespace autograph
