#pragma once
// Loading TorchScript files and building example inputs from shapes, with clear errors.
#include <ATen/core/ivalue.h>
#include <c10/core/Device.h>

#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace torch::jit {
struct Module;
}

namespace autograph {

// One argument of forward: a tensor (the default), or a structure that holds arguments, or a
// plain value.
struct InputSpec {
  enum class Kind { Tensor, Tuple, List, Dict, Int, Float, Bool, None };
  std::vector<int64_t> shape;                      // Tensor
  c10::ScalarType dtype = c10::ScalarType::Float;  // Tensor
  int64_t high = 2;                                // Tensor of integers: drawn from [0, high)
  Kind kind = Kind::Tensor;
  double value = 0;                 // Int, Float, Bool (0 or 1)
  std::vector<InputSpec> elements;  // Tuple, List, Dict (its values)
  std::vector<std::string> keys;    // Dict: the key of each element
};

// Throws ModelLoadError: file missing or unreadable, or not a TorchScript archive.
torch::jit::Module LoadModule(const std::string& path);

// "1,3,224,224" -> {1,3,224,224}; throws InputError on anything else.
std::vector<int64_t> ParseShape(const std::string& text);
// "float32", "int64", ... -> ScalarType; throws InputError on an unknown name.
c10::ScalarType ParseDtype(const std::string& name);

// The NAME.json that models/export.py writes beside NAME.pt: {"inputs": [ARG, ...]}, one ARG per
// argument of forward: a tensor {"shape": [...], "dtype": "float32", "high": 30522} (dtype and high
// optional), {"tuple": [ARG, ...]}, {"list": [ARG, ...]} (tensors, or numbers, or bools),
// {"dict": {"key": ARG, ...}} (string keys, in order; values all tensors, or all numbers, ...), a
// number (3 is an int, 0.5 a float), true / false, or null (None). Throws InputError when malformed.
std::vector<InputSpec> ReadInputSpecs(const std::string& json_path);
// Calls fn on every tensor spec inside `specs` (depth first), e.g. to set the batch size.
void ForEachTensorSpec(std::vector<InputSpec>& specs, const std::function<void(InputSpec&)>& fn);
// NAME.json beside MODEL.pt (same stem), if it exists.
std::optional<std::string> InputSpecPathFor(const std::string& model_path);

// `values` with every tensor moved to `device` (other values as they are): how example inputs reach
// the device a model runs on.
std::vector<c10::IValue> InputsOn(const std::vector<c10::IValue>& values, c10::Device device);

// Deterministic example inputs (fixed seed): normal floats, uniform integers in [0, high), tensors
// drawn depth first; structures and plain values as the specs say.
std::vector<c10::IValue> MakeExampleInputs(const std::vector<InputSpec>& specs, c10::Device device = c10::kCPU,
                                           uint64_t seed = 0);

}  // namespace autograph
