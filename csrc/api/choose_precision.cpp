#include "api/choose_precision.h"

#include <ATen/ATen.h>
#include <ATen/cpu/Utils.h>
#include <c10/util/StringUtil.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>

#include "autograph/error.h"
#include "core/operator_flops.h"
#include "core/output_error.h"
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

// A twin gives up accuracy for time: kept only for a gain beyond the noise of side-by-side medians.
constexpr double kLeastGain = 0.02;

double Median(std::vector<double> samples) { return PercentileMs(std::move(samples), 0.5); }

}  // namespace

bool OffersLoweredPlan(const OptimizeOptions& options, std::string* why) {
  const std::string& asked = options.numerics.precision;
  std::string reason;
  if (asked == "int8") {
    reason = "int8 is the export path's (OpenVINO's candidates quantized by NNCF, on CPU): everything ran in fp32";
  } else if (asked != "bf16" && asked != "fp16") {
    reason = "nothing is lowered below tf32";
  } else if (options.executor.device.is_cpu()) {
    const auto capabilities = at::cpu::get_cpu_capabilities();
    auto has = [&](const char* name) {
      auto it = capabilities.find(name);
      return it != capabilities.end() && it->second.isBool() && it->second.toBool();
    };
    if (asked == "fp16")
      reason = "fp16 is lowered on CUDA; a CPU emulates it, slower: everything ran in fp32";
    else if (!has("avx512_bf16") && !has("amx_bf16"))
      reason = "this CPU has no bf16 instructions (AVX-512 BF16, AMX), which oneDNN would emulate, slower: everything "
               "ran in fp32";
  }
  if (why) *why = reason;
  return reason.empty();
}

PrecisionDecision JudgeTwin(const Program& planned, const Program& twin, const std::string& twin_precision,
                            const std::vector<c10::IValue>& inputs, double tolerance, c10::Device device,
                            const std::vector<std::vector<c10::IValue>>& calibration, const std::string& accuracy) {
  PrecisionDecision decision;
  decision.asked = twin_precision;
  decision.tolerance = tolerance;
  decision.accuracy = accuracy;
  // The reference: the same plan in float32 throughout, whatever the user's switches say, run by a
  // program of its own without a CUDA Graph (`planned`'s graph, captured at its first run, must hold the
  // kernels the user's switches choose, as its timing below and its runs after optimize do).
  ExecutorOptions full_options = planned.options();
  full_options.cuda_graph = false;
  full_options.tf32 = false;
  full_options.full_float32 = true;  // a traced convolution's own allow_tf32 too
  const auto full_program = c10::make_intrusive<Program>(planned.graph(), planned.schedule(), planned.inputs(),
                                                         full_options);
  std::vector<std::vector<c10::IValue>> calls = {inputs};
  calls.insert(calls.end(), calibration.begin(), calibration.end());
  std::vector<std::vector<at::Tensor>> reference, got;
  {
    const FullPrecisionScope full;
    for (const std::vector<c10::IValue>& call : calls) reference.push_back(Outputs(*full_program, call));
  }
  for (const std::vector<c10::IValue>& call : calls) got.push_back(Outputs(twin, call));
  const MeasuredOutputs measured = MeasureOutputs(accuracy, got, reference);
  decision.error = measured.loss;
  decision.judged = measured.per_call;
  decision.calibration_inputs = static_cast<int>(calibration.size());
  if (!(decision.error <= tolerance)) {  // also NaN
    decision.note = "its outputs are beyond the tolerance";
    if (!calibration.empty()) decision.note += " (the largest error of the example's and the calibration inputs')";
    return decision;
  }
  const std::vector<std::function<void()>> runs = {[&] { Outputs(planned, inputs); }, [&] { Outputs(twin, inputs); }};
  const auto samples = TimeRunsSideBySide(device, /*warmup=*/3, /*rounds=*/15, runs);
  decision.fp32_ms = Median(samples[0]);
  decision.lowered_ms = Median(samples[1]);
  if (decision.lowered_ms < (1 - kLeastGain) * decision.fp32_ms)
    decision.kept = twin_precision;
  else
    decision.note = "it measured no faster (by " + c10::str(kLeastGain * 100) + " %)";
  return decision;
}

namespace {

PrecisionDecision Untried(const OptimizeOptions& options, std::string note) {
  PrecisionDecision decision;
  decision.asked = options.numerics.precision;
  decision.tolerance = options.numerics.tolerance;
  decision.accuracy = options.numerics.accuracy;
  decision.note = std::move(note);
  return decision;
}

// The lowered plan's outcome, in a few words for the note of the TF32 twin tried after it.
std::string LoweredOutcome(const std::string& precision, const PrecisionDecision& decision) {
  if (decision.error < 0) return precision + ": " + decision.note;
  return precision + ": " + decision.note + " (error " + c10::str(decision.error) + ")";
}

// The runs tried, for the report: what each computes in and the error measured when it was tried.
std::vector<PrecisionPart> PartsOf(const LoweringRequest& selection, const std::string& precision) {
  std::vector<PrecisionPart> parts;
  for (const LoweredRun& run : selection.runs_tried)
    if (run.operators > 0) parts.push_back({run.operators, run.flops, run.lowered ? precision : "fp32", run.error});
  return parts;
}

// The lowered plan's judgement (JudgeTwin where there is a program to judge; else why none was tried).
PrecisionDecision JudgeLoweredPlan(const Program& planned, const LoweredPlan* lowered,
                                   const std::vector<c10::IValue>& inputs, const OptimizeOptions& options,
                                   const std::vector<std::vector<c10::IValue>>& calibration) {
  std::string why;
  if (!OffersLoweredPlan(options, &why)) return Untried(options, why);
  if (!lowered || !lowered->failure.empty())
    return Untried(options, "the lowered plan could not be made: " +
                                (lowered ? lowered->failure : std::string("none was planned")));
  const LoweringRequest& selection = lowered->selection;
  if (selection.lowerable == 0)
    return Untried(options, "the graph has no compute-bound float32 matrix product or convolution to lower "
                            "(below the device's roofline ridge lowering saves no compute): everything ran in fp32");
  if (!lowered->program) {
    PrecisionDecision decision = Untried(options, "its outputs are beyond the tolerance with any run of its " +
                                                      std::to_string(selection.lowerable) +
                                                      " matrix products and convolutions lowered");
    decision.error = selection.whole_error;  // all of them lowered
    decision.calibration_inputs = static_cast<int>(calibration.size());
    decision.parts = PartsOf(selection, options.numerics.precision);
    return decision;
  }
  const std::string& asked = options.numerics.precision;
  PrecisionDecision decision =
      JudgeTwin(planned, *lowered->program, asked, inputs, options.numerics.tolerance, options.executor.device,
                calibration, options.numerics.accuracy);
  decision.parts = PartsOf(selection, asked);
  if (selection.lowered < selection.lowerable) {
    const std::string part = std::to_string(selection.lowered) + " of " + std::to_string(selection.lowerable) +
                             " matrix products and convolutions lowered (all of them: error " +
                             c10::str(selection.whole_error) + ")";
    decision.note = decision.note.empty() ? part : decision.note + "; " + part;
  }
  return decision;
}

}  // namespace

c10::intrusive_ptr<Program> ChoosePrecision(c10::intrusive_ptr<Program> planned, const LoweredPlan* lowered,
                                            const std::vector<c10::IValue>& inputs, const OptimizeOptions& options,
                                            OptimizeReport* report,
                                            const std::vector<std::vector<c10::IValue>>& calibration) {
  const std::string& asked = options.numerics.precision;
  if (asked == "fp32") return planned;
  const bool cuda = options.executor.device.is_cuda();
  std::string before;  // the lowered plan's outcome, where it was not kept
  if (asked != "tf32") {
    PrecisionDecision decision = JudgeLoweredPlan(*planned, lowered, inputs, options, calibration);
    if (decision.kept == asked || !cuda) {
      report->precision = decision;
      return decision.kept == asked ? lowered->program : planned;
    }
    before = LoweredOutcome(asked, decision) + "; ";
  } else if (!cuda) {
    report->precision = Untried(options, "a CPU has no TF32: everything ran in fp32");
    return planned;
  }
  ExecutorOptions tf32_options = planned->options();
  tf32_options.tf32 = true;
  auto twin = c10::make_intrusive<Program>(planned->graph(), planned->schedule(), planned->inputs(), tf32_options);
  PrecisionDecision decision =
      JudgeTwin(*planned, *twin, "tf32", inputs, options.numerics.tolerance, options.executor.device, calibration,
                options.numerics.accuracy);
  decision.asked = asked;
  if (!before.empty()) decision.note = before + (decision.kept == "tf32" ? "tf32 kept" : "tf32: " + decision.note);
  report->precision = decision;
  return decision.kept == "tf32" ? twin : planned;
}

}  // namespace autograph
