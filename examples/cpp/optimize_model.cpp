// The design's use, from a separate project: torch::jit::load a TorchScript model, autograph::optimize
// it for example inputs, run both on the same inputs, print the report's summary and the largest
// difference relative to the output's scale, save the optimized module. Exits 1 when they differ by
// more than 1e-4 of the scale (float32 ATen kernels scheduled differently, oneDNN's prepacked
// convolutions: measured up to ~3e-6 on the zoo), 2 on bad arguments.
//   optimize_model MODEL.pt SHAPE [OUT.pt]      e.g. optimize_model squeezenet.pt 1,3,224,224 out.pt
#include <torch/script.h>

#include <algorithm>
#include <iostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "autograph/error.h"
#include "autograph/model_loading.h"  // ParseShape
#include "autograph/optimize.h"
#include "autograph/substitute.h"     // (included to show every public header stands alone)

namespace {

at::Tensor First(const c10::IValue& value) {
  if (value.isTensor()) return value.toTensor();
  if (value.isTuple()) return First(value.toTupleRef().elements().at(0));
  if (value.isList()) return First(value.toList().get(0));
  throw std::runtime_error("the model returns no tensor first");
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::cerr << "usage: optimize_model MODEL.pt SHAPE [OUT.pt]   (SHAPE e.g. 1,3,224,224)\n";
    return 2;
  }
  try {
    torch::NoGradGuard no_grad;
    torch::jit::Module module = torch::jit::load(argv[1]);
    module.eval();
    torch::manual_seed(0);
    const at::Tensor x = torch::randn(autograph::ParseShape(argv[2]));  // InputError on a bad shape

    autograph::OptimizeOptions options;
    options.example_inputs = {x};
    options.search.verify = 1;  // a quick run: the best candidate against one-stream and Nimble's
    autograph::OptimizeReport report;
    torch::jit::Module optimized = autograph::optimize(module, options, &report);

    const at::Tensor want = First(module.forward({x})), got = First(optimized.forward({x}));
    const double scale = want.abs().max().item<double>(), err = (got - want).abs().max().item<double>();
    std::cout << "optimized " << argv[1] << ": " << report.method << " on " << report.device << ", "
              << report.operators_before << " -> " << report.operators_after << " kernels, " << report.stages
              << " stages, kept " << report.chosen << "; max difference " << err << " (scale " << scale << ")\n";
    const nlohmann::json json = autograph::ReportToJson(report);  // the report as `autograph optimize --json` prints it
    std::cout << "candidates verified: " << json["candidates_verified"] << "\n";
    if (argc > 3) optimized.save(argv[3]);
    return err <= 1e-4 * std::max(scale, 1e-12) ? 0 : 1;
  } catch (const autograph::Error& e) {  // InputError, UnsupportedModelError: what, where, what to do
    std::cerr << "optimize_model: " << e.what() << "\n";
    return 2;
  } catch (const c10::Error& e) {  // torch::jit::load: no such file, not a TorchScript archive
    std::cerr << "optimize_model: " << e.what_without_backtrace() << "\n";
    return 2;
  }
}
