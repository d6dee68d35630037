#pragma once
// OpKind: what an operator of the operator graph costs mostly. Its own header, of the lowest layer
// (core): the operator graph classifies operators by it, and the report's timeline names each
// operator's kind with it. Includes nothing of autograph's.
#include <optional>
#include <string>

namespace autograph {

enum class OpKind {
  ComputeBound,  // convolutions, GEMMs
  MemoryBound,   // elementwise, pooling, reductions, normalization, copies
  View,          // no kernel: views, metadata, list/tuple plumbing
  ControlFlow,   // prim::If / prim::Loop, run opaquely by the TorchScript interpreter
};

// "compute", "memory", "view", "control_flow": how the report, the inspect JSON and saved programs
// name a kind.
inline const char* ToString(OpKind kind) {
  switch (kind) {
    case OpKind::ComputeBound: return "compute";
    case OpKind::MemoryBound: return "memory";
    case OpKind::View: return "view";
    case OpKind::ControlFlow: return "control_flow";
  }
  return "unknown";
}

// The inverse of ToString; nullopt for a name that is no kind.
inline std::optional<OpKind> OpKindFromString(const std::string& name) {
  for (OpKind k : {OpKind::ComputeBound, OpKind::MemoryBound, OpKind::View, OpKind::ControlFlow})
    if (name == ToString(k)) return k;
  return std::nullopt;
}

}  // namespace autograph
