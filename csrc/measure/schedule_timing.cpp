// TimeSchedule: a whole schedule run for real, as the optimized module runs it (StageExecutor on the
// device, optionally under a CUDA Graph), for the on-board verification of a search's best candidates.
#include <ATen/core/grad_mode.h>

#include <algorithm>

#include "executor/run_timing.h"
#include "executor/stage_executor.h"
#include "executor/validate_schedule.h"
#include "measure/extract_stage.h"
#include "measure/measured_cost_model.h"

namespace autograph {

ScheduleTiming TimeSchedule(const OpGraph& graph, const Schedule& schedule, const std::vector<c10::IValue>& inputs,
                            c10::Device device, bool cuda_graph, int warmup, int repeats, double fastest_fraction) {
  ValidateSchedule(schedule, graph);
  if (!(fastest_fraction > 0 && fastest_fraction <= 1))
    throw Error("fastest_fraction is " + std::to_string(fastest_fraction) + "; expected a fraction in (0, 1]");
  at::NoGradGuard no_grad;
  StageExecutor executor(graph, schedule, ExecutorOptions{device, cuda_graph});
  // Inputs the graph writes in place get a fresh copy per run (outside the timed span), so that
  // every run sees the same data.
  const std::vector<bool> mutated = InputsWrittenInPlace(graph);
  std::vector<c10::IValue> run_inputs;
  auto prepare = [&] {
    run_inputs = inputs;
    for (size_t i = 0; i < run_inputs.size() && i < mutated.size(); ++i)
      if (mutated[i]) run_inputs[i] = inputs[i].deepcopy();
  };
  auto run = [&] { executor.Run(std::move(run_inputs)); };
  if (cuda_graph) warmup = std::max(warmup, 1);  // the capture is not a sample
  const std::vector<double> ms = TimeRuns(device, warmup, repeats, prepare, run);
  return ScheduleTiming{RobustMs(ms, fastest_fraction), PercentileMs(ms, 0.5), PercentileMs(ms, 0.9)};
}

}  // namespace autograph
