#pragma once
// A graph as IR text plus its tensor constants (kept as tensors, not text), and back. The restored
// graph computes the same; its non-constant nodes keep their order, while tensor constants move
// to the top of the graph and value names and refined types may differ.
#include <ATen/core/Tensor.h>

#include <memory>
#include <string>
#include <vector>

namespace torch::jit {
struct Graph;
}

namespace autograph {

struct SerializedGraph {
  std::string ir;
  std::vector<at::Tensor> tensor_constants;
};

SerializedGraph SerializeGraph(const torch::jit::Graph& graph);
// Throws Error when the text does not parse or the constants do not match it.
std::shared_ptr<torch::jit::Graph> DeserializeGraph(const SerializedGraph& serialized);

}  // namespace autograph
