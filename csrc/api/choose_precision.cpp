#include "api/choose_precision.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>

#include "autograph/error.h"
#include "core/operator_flops.h"
#include "executor/float32_switches.h"
#include "executor/run_timing.h"

namespace autograph {
namespace {

std::vector<at::Tensor> Outputs(const Program& program, const std::vector<c10::IValue>& inputs) {
  at::NoGradGuard no_grad;
  std::vector<at::Tensor> out;
  CollectTensors(program.Call(inputs), &out);
  return out;
}

// The largest |got - want| over max |want|, the worst over the outputs: NaN where either holds a NaN or
// an infinity; infinite where an output differs in shape or dtype, or an integer one in any value.
double RelativeError(const std::vector<at::Tensor>& got, const std::vector<at::Tensor>& want) {
  if (got.size() != want.size()) return std::numeric_limits<double>::infinity();
  double worst = 0;
  for (size_t k = 0; k < got.size(); ++k) {
    if (got[k].sizes() != want[k].sizes() || got[k].scalar_type() != want[k].scalar_type())
      return std::numeric_limits<double>::infinity();
    if (!at::isFloatingType(want[k].scalar_type())) {
      if (!at::equal(got[k], want[k])) return std::numeric_limits<double>::infinity();
      continue;
    }
    if (want[k].numel() == 0) continue;
    const at::Tensor g = got[k].to(at::kDouble), w = want[k].to(at::kDouble);
    const double diff = (g - w).abs().max().item<double>(), scale = w.abs().max().item<double>();
    if (!std::isfinite(diff) || !std::isfinite(scale)) return std::numeric_limits<double>::quiet_NaN();
    worst = std::max(worst, scale > 0 ? diff / scale : diff);
  }
  return worst;
}

double Median(std::vector<double> samples) { return PercentileMs(std::move(samples), 0.5); }

}  // namespace

void CheckPrecisionOnTorchScript(const OptimizeOptions& options) {
  const std::string& precision = options.numerics.precision;
  if (precision != "fp32" && precision != "tf32")
    throw InputError("option 'precision' is \"" + precision + "\": the TorchScript path computes in fp32 or tf32 (on "
                     "CUDA); " + precision + " is the export path's: optimize an ExportedProgram, or pass ir=\"export\"");
}

PrecisionDecision JudgeTwin(const Program& planned, const Program& twin, const std::string& twin_precision,
                            const std::vector<c10::IValue>& inputs, double tolerance, c10::Device device) {
  PrecisionDecision decision;
  decision.asked = twin_precision;
  decision.tolerance = tolerance;
  // The reference: the same plan in float32 throughout, whatever the user's switches say, run by a
  // program of its own without a CUDA Graph (`planned`'s graph, captured at its first run, must hold the
  // kernels the user's switches choose, as its timing below and its runs after optimize do).
  ExecutorOptions full_options = planned.options();
  full_options.cuda_graph = false;
  full_options.tf32 = false;
  const auto full_program = c10::make_intrusive<Program>(planned.graph(), planned.schedule(), planned.inputs(),
                                                         full_options);
  std::vector<at::Tensor> reference;
  {
    const FullPrecisionScope full;
    reference = Outputs(*full_program, inputs);
  }
  decision.error = RelativeError(Outputs(twin, inputs), reference);
  if (!(decision.error <= tolerance)) {  // also NaN
    decision.note = "its outputs are beyond the tolerance";
    return decision;
  }
  const std::vector<std::function<void()>> runs = {[&] { Outputs(planned, inputs); }, [&] { Outputs(twin, inputs); }};
  const auto samples = TimeRunsSideBySide(device, /*warmup=*/3, /*rounds=*/15, runs);
  decision.fp32_ms = Median(samples[0]);
  decision.lowered_ms = Median(samples[1]);
  if (decision.lowered_ms < decision.fp32_ms)
    decision.kept = twin_precision;
  else
    decision.note = "it measured no faster";
  return decision;
}

c10::intrusive_ptr<Program> ChoosePrecision(c10::intrusive_ptr<Program> planned, const std::vector<c10::IValue>& inputs,
                                            const OptimizeOptions& options, OptimizeReport* report) {
  const std::string& asked = options.numerics.precision;
  if (asked == "fp32") return planned;
  const c10::Device device = options.executor.device;
  if (!device.is_cuda()) {
    PrecisionDecision decision;
    decision.asked = asked;
    decision.tolerance = options.numerics.tolerance;
    decision.note = "a CPU has no TF32: everything ran in fp32";
    report->precision = decision;
    return planned;
  }
  ExecutorOptions lowered_options = planned->options();
  lowered_options.tf32 = true;
  auto twin = c10::make_intrusive<Program>(planned->graph(), planned->schedule(), planned->inputs(), lowered_options);
  PrecisionDecision decision = JudgeTwin(*planned, *twin, "tf32", inputs, options.numerics.tolerance, device);
  decision.asked = asked;
  report->precision = decision;
  return decision.kept == "tf32" ? twin : planned;
}

}  // namespace autograph
