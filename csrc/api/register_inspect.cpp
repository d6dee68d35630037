// autograph::inspect: the statistics of `autograph inspect`, for Python (torch.ops.autograph.inspect).
#include <torch/library.h>
#include <torch/script.h>

#include "autograph/error.h"
#include "api/inspect.h"
#include "autograph/model_loading.h"

namespace autograph {
namespace {

// JSON statistics of a saved model on the given example inputs (see `autograph inspect --json`).
std::string InspectOp(const std::string& model_path, const std::vector<at::Tensor>& example_inputs) {
  try {
    torch::jit::Module module = LoadModule(model_path);
    std::vector<c10::IValue> inputs(example_inputs.begin(), example_inputs.end());
    return StatisticsJson(InspectModule(module, inputs).statistics, model_path).dump();
  } catch (const Error& e) {
    TORCH_CHECK_VALUE(false, "autograph: ", e.what());  // ValueError in Python
  }
}

}  // namespace
}  // namespace autograph

TORCH_LIBRARY_FRAGMENT(autograph, m) {
  m.def("inspect(str model_path, Tensor[] example_inputs) -> str", &autograph::InspectOp);
}
