// autograph::optimize and autograph::substitute for Python (torch.ops.autograph.optimize): a
// ScriptModule in (an `Any` argument carries the module's object), the new module and the report
// JSON out. python/autograph wraps them as autograph.optimize / autograph.substitute. And
// autograph::timeline_svg, which draws a report's timeline.
#include <nlohmann/json.hpp>
#include <torch/library.h>
#include <torch/script.h>

#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "api/optimize_exported.h"
#include "api/option_table.h"
#include "api/timeline.h"
#include "api/timeline_svg.h"
#include "autograph/error.h"
#include "autograph/optimize.h"
#include "autograph/substitute.h"
#include "core/output_error.h"

namespace autograph {
namespace {

torch::jit::Module ModuleOf(const c10::IValue& module) {
  if (!module.isObject() || !module.toObjectRef().type()->is_module())
    throw InputError("expected a TorchScript module (torch.jit.ScriptModule), got " + module.type()->str());
  return torch::jit::Module(module.toObject());
}

// The options given by name; with `path`, each of them must act on that path (given, it was set, even
// at its default value).
OptimizeOptions OptionsOf(const std::vector<c10::IValue>& example_inputs, const std::string& options_json,
                          std::optional<ModelPath> path) {
  nlohmann::json json = nlohmann::json::parse(options_json, nullptr, /*allow_exceptions=*/false);
  if (json.is_discarded()) throw InputError("options are not JSON: " + options_json);
  OptimizeOptions options = OptimizeOptionsFromJson(json);
  if (path) CheckOptionsApplyOn(OptionKeysOf(json), *path);
  options.example_inputs = example_inputs;
  return options;
}

// Python sees InputError and UnsupportedModelError as ValueError, the rest as RuntimeError; the
// message starts with the error's kind so that autograph's Python side can raise its own types.
template <typename Body>
auto WithErrorKinds(Body&& body) -> decltype(body()) {
  try {
    return std::forward<Body>(body)();
  } catch (const InputError& e) {
    TORCH_CHECK_VALUE(false, "autograph InputError: ", e.what());
  } catch (const UnsupportedModelError& e) {
    TORCH_CHECK_VALUE(false, "autograph UnsupportedModelError: ", e.what());
  } catch (const Error& e) {
    TORCH_CHECK(false, "autograph Error: ", e.what());
  }
}

// Runs optimize or substitute (same signature) and returns the new module and the report JSON.
using Driver = torch::jit::Module (*)(const torch::jit::Module&, const OptimizeOptions&, OptimizeReport*);

// `calibration`: optimize's calibration inputs, each a list of a call's arguments (substitute's is empty).
template <Driver run>
std::tuple<c10::IValue, std::string> DriverOp(c10::IValue module, std::vector<c10::IValue> example_inputs,
                                              std::string options_json, std::vector<c10::IValue> calibration) {
  return WithErrorKinds([&]() -> std::tuple<c10::IValue, std::string> {
    OptimizeReport report;
    OptimizeOptions options = OptionsOf(example_inputs, options_json, ModelPath::TorchScript);
    for (size_t k = 0; k < calibration.size(); ++k) {
      if (!calibration[k].isList())
        throw InputError("calibration input " + std::to_string(k) + ": a list of the call's arguments, not " +
                         calibration[k].tagKind());
      const c10::List<c10::IValue> call = calibration[k].toList();
      options.calibration_inputs.emplace_back(call.begin(), call.end());
    }
    torch::jit::Module result = run(ModuleOf(module), options, &report);
    return {result._ivalue(), ReportToJson(report).dump()};
  });
}

// The export path's planner: an exported program's ATen graph (AtenGraph JSON, written by the Python
// package python/autograph/export/) and its tensors (weights, then example inputs) in; the program
// text for autograph::execute and the plan's report JSON out. The options the Python side acts on
// after planning (compiled parts) it resolves itself, so the report does not repeat them.
std::tuple<std::string, std::string> OptimizeExportedOp(std::string graph_json, std::vector<at::Tensor> tensors,
                                                        std::string options_json) {
  return WithErrorKinds([&]() -> std::tuple<std::string, std::string> {
    nlohmann::json graph = nlohmann::json::parse(graph_json, nullptr, /*allow_exceptions=*/false);
    if (graph.is_discarded()) throw Error("malformed exported graph: not JSON");
    OptimizeReport report;
    const OptimizeOptions options = OptionsOf({}, options_json, ModelPath::Export);
    std::string program = OptimizeExported(graph, tensors, options, &report);
    return {std::move(program), ReportToJson(report).dump()};
  });
}

// The options alone, checked as optimize would check them (InputError naming a bad key or value), so
// that Python refuses bad options before any tracing, export or compile.
void CheckOptionsOp(std::string options_json) {
  WithErrorKinds([&] { OptionsOf({}, options_json, std::nullopt); });
}

// Option accuracy's measure over `calls` calls' outputs (`got` and `want` flat, each call's outputs in turn, as many
// per call): [the loss option tolerance bounds, then each call's], for the export path's gate.
std::vector<double> MeasureOutputsOp(std::string measure, std::vector<at::Tensor> got, std::vector<at::Tensor> want,
                                     int64_t calls) {
  if (calls <= 0 || got.size() != want.size() || got.size() % calls != 0)
    TORCH_CHECK_VALUE(false, "autograph InputError: measure_outputs: ", got.size(), " outputs and ", want.size(),
                      " reference outputs do not split into ", calls, " calls");
  const size_t per_call = got.size() / calls;
  std::vector<std::vector<at::Tensor>> got_calls, want_calls;
  for (size_t c = 0; c < static_cast<size_t>(calls); ++c) {
    got_calls.emplace_back(got.begin() + c * per_call, got.begin() + (c + 1) * per_call);
    want_calls.emplace_back(want.begin() + c * per_call, want.begin() + (c + 1) * per_call);
  }
  std::vector<double> out;
  WithErrorKinds([&] {
    const MeasuredOutputs measured = MeasureOutputs(measure, got_calls, want_calls);
    out.push_back(measured.loss);
    out.insert(out.end(), measured.per_call.begin(), measured.per_call.end());
  });
  return out;
}

// Every option as the table declares it (JSON), for Python's Settings and the docs.
std::string OptionTableOp() { return OptimizeOptionTableJson().dump(); }

// A report's "timeline" drawn as SVG (autograph.optimize puts it in report["timeline"]["svg"]).
std::string TimelineSvgOp(std::string timeline_json, std::string title) {
  nlohmann::json json = nlohmann::json::parse(timeline_json, nullptr, /*allow_exceptions=*/false);
  if (json.is_discarded() || !json.is_object()) TORCH_CHECK_VALUE(false, "autograph InputError: the timeline is not a JSON object");
  try {
    return TimelineSvg(TimelineFromJson(json), title);
  } catch (const Error& e) {
    TORCH_CHECK_VALUE(false, "autograph InputError: ", e.what());
  }
}

}  // namespace
}  // namespace autograph

TORCH_LIBRARY_FRAGMENT(autograph, m) {
  m.def("optimize(Any module, Any[] example_inputs, str options, Any[] calibration) -> (Any, str)",
        &autograph::DriverOp<&autograph::optimize>);
  m.def("substitute(Any module, Any[] example_inputs, str options, Any[] calibration) -> (Any, str)",
        &autograph::DriverOp<&autograph::substitute>);
  m.def("optimize_exported(str graph, Tensor[] tensors, str options) -> (str, str)", &autograph::OptimizeExportedOp);
  m.def("timeline_svg(str timeline, str title) -> str", &autograph::TimelineSvgOp);
  m.def("check_options(str options) -> ()", &autograph::CheckOptionsOp);
  m.def("option_table() -> str", &autograph::OptionTableOp);
  m.def("measure_outputs(str measure, Tensor[] got, Tensor[] want, int calls) -> float[]", &autograph::MeasureOutputsOp);
}
