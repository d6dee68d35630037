#pragma once
// Loading TorchScript files and building example inputs from shapes, with clear errors.
#include <ATen/core/ivalue.h>
#include <c10/core/Device.h>

#include <optional>
#include <string>
#include <vector>

namespace torch::jit {
struct Module;
}

namespace autograph {

struct InputSpec {
  std::vector<int64_t> shape;
  c10::ScalarType dtype = c10::ScalarType::Float;
  int64_t high = 2;  // integer inputs are drawn from [0, high)
};

// Throws ModelLoadError: file missing or unreadable, or not a TorchScript archive.
torch::jit::Module LoadModule(const std::string& path);

// "1,3,224,224" -> {1,3,224,224}; throws InputError on anything else.
std::vector<int64_t> ParseShape(const std::string& text);
// "float32", "int64", ... -> ScalarType; throws InputError on an unknown name.
c10::ScalarType ParseDtype(const std::string& name);

// The NAME.json that models/export.py writes beside NAME.pt: {"inputs": [{"shape": [...],
// "dtype": "float32", "high": 30522}]}. Throws InputError when malformed.
std::vector<InputSpec> ReadInputSpecs(const std::string& json_path);
// NAME.json beside MODEL.pt (same stem), if it exists.
std::optional<std::string> InputSpecPathFor(const std::string& model_path);

// Deterministic example inputs (fixed seed): normal floats, uniform integers in [0, high).
// `values` with every tensor moved to `device` (other values as they are): how example inputs reach
// the device a model runs on.
std::vector<c10::IValue> InputsOn(const std::vector<c10::IValue>& values, c10::Device device);

std::vector<c10::IValue> MakeExampleInputs(const std::vector<InputSpec>& specs, c10::Device device = c10::kCPU,
                                           uint64_t seed = 0);

}  // namespace autograph
