// The autograph library of operators (TORCH_LIBRARY; each layer adds its operators as fragments) with
// the Program custom class and autograph::call (autograph::run for modules optimized before format 4),
// which optimized modules call. Every registration lives
// in libautograph.so, so torch.ops.load_library makes them all available to Python and TorchScript.
#include <torch/library.h>
// TorchScript: registers the Program custom class and autograph::call / run with TorchScript.
#include <torch/script.h>

#include "autograph/error.h"
#include "executor/program.h"
#include "executor/op_errors.h"

namespace autograph {
namespace {

std::vector<at::Tensor> RunOp(const std::vector<at::Tensor>& inputs, const c10::intrusive_ptr<Program>& program) {
  return WithTorchErrors([&] { return program->Run(inputs); });
}

// The forward's arguments arrive as one tuple (any TorchScript types inside); what the graph returns
// goes back as it is, and the forward casts it to its return type.
c10::IValue CallOp(c10::IValue arguments, const c10::intrusive_ptr<Program>& program) {
  TORCH_CHECK_TYPE(arguments.isTuple(), "autograph::call takes the forward's arguments as one tuple, got a ",
                   arguments.tagKind());
  const auto& elements = arguments.toTupleRef().elements();
  std::vector<c10::IValue> args(elements.begin(), elements.end());
  return WithTorchErrors([&] { return program->Call(std::move(args)); });
}

}  // namespace
}  // namespace autograph

TORCH_LIBRARY(autograph, m) {
  m.class_<autograph::Program>("Program")
      // How many schedules it holds: the example's, one per `shapes` entry, those planned at call time.
      .def("num_plans", [](const c10::intrusive_ptr<autograph::Program>& self) {
        return static_cast<int64_t>(self->num_plans());
      })
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
  m.def("call(Any arguments, __torch__.torch.classes.autograph.Program program) -> Any", &autograph::CallOp);
}
