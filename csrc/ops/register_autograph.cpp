// Every TORCH_LIBRARY(autograph, ...) registration lives in this library, so that
// torch.ops.load_library("libautograph.so") makes them all available to Python and TorchScript.
#include <torch/library.h>
#include <torch/script.h>

#include "autograph/error.h"
#include "autograph/inspect.h"
#include "autograph/model_loading.h"
#include "autograph/program.h"

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

std::vector<at::Tensor> RunOp(const std::vector<at::Tensor>& inputs, const c10::intrusive_ptr<Program>& program) {
  try {
    return program->Run(inputs);
  } catch (const InputError& e) {
    TORCH_CHECK_VALUE(false, "autograph: ", e.what());
  } catch (const Error& e) {
    TORCH_CHECK(false, "autograph: ", e.what());
  }
}

}  // namespace
}  // namespace autograph

TORCH_LIBRARY(autograph, m) {
  m.class_<autograph::Program>("Program")
      .def_pickle(
          [](const c10::intrusive_ptr<autograph::Program>& self) { return self->ToState(); },
          [](autograph::Program::State state) {
            try {
              return autograph::Program::FromState(std::move(state));
            } catch (const autograph::Error& e) {
              TORCH_CHECK(false, "autograph: cannot load the optimized module: ", e.what());
            }
          });
  // Pure: reads its inputs and the program, writes nothing else, so ordinary DCE rules apply.
  m.def("run(Tensor[] inputs, __torch__.torch.classes.autograph.Program program) -> Tensor[]", &autograph::RunOp);
  m.def("inspect(str model_path, Tensor[] example_inputs) -> str", &autograph::InspectOp);
}
