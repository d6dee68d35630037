// autograph::execute, which optimized exported programs call: the user's tensors and the program's
// weights in, the outputs out; the program travels as its text (AtenProgram), parsed once per process.
// Its fake (meta) implementation, which export and AOTInductor trace with, is registered from Python
// (python/autograph/export.py) from the outputs listed in the text's header.
#include <torch/library.h>

#include "executor/aten_program.h"
#include "executor/op_errors.h"

namespace autograph {
namespace {

// The text arrives as a view of the caller's string: no copy per call.
std::vector<at::Tensor> ExecuteOp(const std::vector<at::Tensor>& inputs, c10::string_view program) {
  return WithTorchErrors([&] { return AtenProgram::Cached(std::string_view(program.data(), program.size()))->Run(inputs); });
}

std::string WithGraphForOtherShapesOp(const std::string& program, const std::string& graph,
                                      const std::vector<int64_t>& positions, const std::optional<std::string>& run_graph,
                                      const std::optional<std::vector<int64_t>>& run_positions) {
  return WithTorchErrors([&] {
    const std::vector<int64_t> run = run_positions.value_or(std::vector<int64_t>{});
    return AtenProgram::WithGraphForOtherShapes(program, graph, std::vector<int>(positions.begin(), positions.end()),
                                                run_graph.value_or(""), std::vector<int>(run.begin(), run.end()));
  });
}

std::string WithPlanForShapeOp(const std::string& program, const std::string& plan, const std::vector<int64_t>& positions) {
  return WithTorchErrors([&] {
    return AtenProgram::WithPlanForShape(program, plan, std::vector<int>(positions.begin(), positions.end()));
  });
}

std::string WithTf32Op(const std::string& program) {
  return WithTorchErrors([&] { return AtenProgram::WithTf32(program); });
}

std::string WithPackedWeightsOp(const std::string& program, const std::string& packing) {
  return WithTorchErrors([&] { return AtenProgram::WithPackedWeights(program, packing); });
}

}  // namespace
}  // namespace autograph

TORCH_LIBRARY_FRAGMENT(autograph, m) {
  // Pure: reads its inputs, writes nothing else.
  m.def("execute(Tensor[] inputs, str program) -> Tensor[]");
  m.impl("execute", c10::DispatchKey::CompositeExplicitAutograd, TORCH_FN(autograph::ExecuteOp));
  // The export path's step for a program exported with dynamic shapes (see AtenProgram).
  m.def("with_graph_for_other_shapes(str program, str graph, int[] positions, str? run_graph=None, "
        "int[]? run_positions=None) -> str",
        TORCH_FN(autograph::WithGraphForOtherShapesOp));
  // And its plans for further shapes (the `shapes` option on that path).
  m.def("with_plan_for_shape(str program, str plan, int[] positions) -> str", TORCH_FN(autograph::WithPlanForShapeOp));
  // The candidate in TF32 that option precision offers on CUDA.
  m.def("with_tf32(str program) -> str", TORCH_FN(autograph::WithTf32Op));
  // The program taking its small weights packed (python/autograph/export/packed_weights.py).
  m.def("with_packed_weights(str program, str packing) -> str", TORCH_FN(autograph::WithPackedWeightsOp));
}
