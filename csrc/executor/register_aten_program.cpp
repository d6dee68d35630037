// autograph::execute, which optimized exported programs call: the user's tensors and the program's
// weights in, the outputs out; the program travels as its text (AtenProgram), parsed once per process.
// Its fake (meta) implementation, which export and AOTInductor trace with, is registered from Python
// (python/autograph/export.py) from the outputs listed in the text's header.
#include <torch/library.h>

#include "autograph/error.h"
#include "executor/aten_program.h"

namespace autograph {
namespace {

std::vector<at::Tensor> ExecuteOp(const std::vector<at::Tensor>& inputs, const std::string& program) {
  try {
    return AtenProgram::Cached(program)->Run(inputs);
  } catch (const InputError& e) {
    TORCH_CHECK_VALUE(false, "autograph: ", e.what());
  } catch (const Error& e) {
    TORCH_CHECK(false, "autograph: ", e.what());
  }
}

}  // namespace
}  // namespace autograph

TORCH_LIBRARY_FRAGMENT(autograph, m) {
  // Pure: reads its inputs, writes nothing else.
  m.def("execute(Tensor[] inputs, str program) -> Tensor[]");
  m.impl("execute", c10::DispatchKey::CompositeExplicitAutograd, TORCH_FN(autograph::ExecuteOp));
}
