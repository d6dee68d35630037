#pragma once
// A graph as IR text plus its tensor constants (kept as tensors, not text), and back. The restored
// graph computes the same; its non-constant nodes keep their order, while tensor constants move
// to the top of the graph and value names and refined types may differ. oneDNN (mkldnn-layout)
// constants, which TorchScript cannot pickle, travel as dense tensors with a layout tag and are
// converted back on load (a convolution's weight reordered again for that convolution). Constant
// lists of tensors (Tensor[], Tensor?[]) travel the same way, their elements among the tensor
// constants and their shape (which elements are None) in the layout tag.
#include <ATen/core/Tensor.h>

#include <memory>
#include <string>
#include <vector>

namespace torch::jit {
struct Graph;
}

namespace autograph {

// How a tensor constant is laid out in the graph, when not plainly strided.
inline constexpr const char* kOneDnnLayout = "mkldnn";                   // tensor.to_mkldnn()
inline constexpr const char* kOneDnnConvWeightLayout = "mkldnn_conv_weight";  // reordered for its convolution

struct SerializedGraph {
  std::string ir;
  std::vector<at::Tensor> tensor_constants;  // strided, always
  // One per lifted constant: "" (strided), a layout above, or a list's "tensor_list:tt" /
  // "optional_tensor_list:nt" (a tensor or None per element). Empty in programs saved before
  // layouts were: then every lifted constant is one strided tensor.
  std::vector<std::string> constant_layouts;
};

SerializedGraph SerializeGraph(const torch::jit::Graph& graph);
// Throws Error when the text does not parse or the constants do not match it.
std::shared_ptr<torch::jit::Graph> DeserializeGraph(const SerializedGraph& serialized);

}  // namespace autograph
