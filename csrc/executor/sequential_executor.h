#pragma once
// Runs an OpGraph operator by operator, in id order, with pre-resolved operations: the reference
// every parallel schedule is checked against, and the seed of the stream executor.
#include <ATen/core/ivalue.h>

#include <vector>

#include "core/op_graph.h"
#include "executor/compiled_graph.h"

namespace autograph {

class SequentialExecutor {
 public:
  explicit SequentialExecutor(const OpGraph& graph);
  // Thread-safe. Returns forward's outputs (one IValue per graph output).
  std::vector<c10::IValue> Run(std::vector<c10::IValue> inputs) const { return compiled_.Run(std::move(inputs)); }

 private:
  CompiledGraph compiled_;
};

}  // namespace autograph
