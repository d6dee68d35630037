#pragma once
// The operators that call a compiled part (Inductor's, OpenVINO's, ONNX Runtime's), all with the
// arguments (Tensor[] inputs, Tensor package, str spec): the one list that the import (which plans a
// part by its spec's FLOPs) and AtenProgram (which binds the package tensors) recognise them by.
#include <string_view>

#include "executor/inductor_part.h"
#include "executor/onnxruntime_part.h"
#include "executor/openvino_part.h"

namespace autograph {

inline constexpr std::string_view kCompiledPartOps[] = {kInductorPartOp, kOpenVinoPartOp, kOnnxRuntimePartOp};

inline bool IsCompiledPartOp(std::string_view op) {
  for (std::string_view part_op : kCompiledPartOps)
    if (op == part_op) return true;
  return false;
}

}  // namespace autograph
