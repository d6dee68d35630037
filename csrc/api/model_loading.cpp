#include "autograph/model_loading.h"

#include <ATen/ATen.h>
#include <torch/csrc/jit/serialization/import.h>
#include <torch/script.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "autograph/error.h"

namespace autograph {

namespace fs = std::filesystem;

torch::jit::Module LoadModule(const std::string& path) {
  std::error_code ec;
  if (!fs::exists(path, ec)) throw ModelLoadError("cannot open '" + path + "': no such file");
  if (fs::is_directory(path, ec)) throw ModelLoadError("cannot open '" + path + "': it is a directory, not a model file");
  std::ifstream probe(path, std::ios::binary);
  if (!probe) throw ModelLoadError("cannot open '" + path + "': permission denied or unreadable");
  try {
    return torch::jit::load(path);
  } catch (const std::exception& e) {
    throw ModelLoadError("'" + path + "' is not a loadable TorchScript file (" + FirstLineOf(e) +
                         "); save models with torch.jit.save(torch.jit.script(m) or torch.jit.trace(m, x), path)");
  }
}

std::vector<int64_t> ParseShape(const std::string& text) {
  std::vector<int64_t> shape;
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find_first_of(",x", start);
    std::string part = text.substr(start, end == std::string::npos ? std::string::npos : end - start);
    size_t used = 0;
    long long value = -1;
    try {
      value = std::stoll(part, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (part.empty() || used != part.size() || value <= 0) {
      throw InputError("bad input shape '" + text + "': expected positive integers separated by commas, e.g. 1,3,224,224");
    }
    shape.push_back(value);
    if (end == std::string::npos) break;
    start = end + 1;
  }
  return shape;
}

c10::ScalarType ParseDtype(const std::string& name) {
  static const std::vector<std::pair<std::string, c10::ScalarType>> names = {
      {"float32", c10::kFloat}, {"float", c10::kFloat}, {"float16", c10::kHalf}, {"half", c10::kHalf},
      {"bfloat16", c10::kBFloat16}, {"float64", c10::kDouble}, {"double", c10::kDouble}, {"int64", c10::kLong},
      {"long", c10::kLong}, {"int32", c10::kInt}, {"int", c10::kInt}, {"bool", c10::kBool}, {"uint8", c10::kByte}};
  for (const auto& [n, t] : names)
    if (n == name) return t;
  throw InputError("unknown dtype '" + name + "': use float32, float16, bfloat16, float64, int64, int32, bool or uint8");
}

std::vector<InputSpec> ReadInputSpecs(const std::string& json_path) {
  std::ifstream in(json_path);
  if (!in) throw InputError("cannot open input description '" + json_path + "'");
  std::vector<InputSpec> specs;
  try {
    nlohmann::json doc = nlohmann::json::parse(in);
    for (const auto& entry : doc.at("inputs")) {
      InputSpec spec;
      spec.shape = entry.at("shape").get<std::vector<int64_t>>();
      if (entry.contains("dtype")) spec.dtype = ParseDtype(entry.at("dtype").get<std::string>());
      if (entry.contains("high")) spec.high = entry.at("high").get<int64_t>();
      specs.push_back(std::move(spec));
    }
  } catch (const nlohmann::json::exception& e) {
    throw InputError("malformed input description '" + json_path + "': " + e.what() +
                     "; expected {\"inputs\": [{\"shape\": [1,3,224,224], \"dtype\": \"float32\"}]}");
  }
  return specs;
}

std::optional<std::string> InputSpecPathFor(const std::string& model_path) {
  fs::path p(model_path);
  p.replace_extension(".json");
  std::error_code ec;
  if (fs::exists(p, ec)) return p.string();
  return std::nullopt;
}

std::vector<c10::IValue> InputsOn(const std::vector<c10::IValue>& values, c10::Device device) {
  std::vector<c10::IValue> out;
  for (const c10::IValue& v : values) out.push_back(v.isTensor() ? c10::IValue(v.toTensor().to(device)) : v);
  return out;
}

std::vector<c10::IValue> MakeExampleInputs(const std::vector<InputSpec>& specs, c10::Device device, uint64_t seed) {
  at::Generator gen = at::detail::createCPUGenerator(seed);
  std::vector<c10::IValue> inputs;
  for (const InputSpec& spec : specs) {
    at::Tensor t;
    if (c10::isFloatingType(spec.dtype)) {
      t = at::randn(spec.shape, gen, at::TensorOptions().dtype(at::kFloat)).to(spec.dtype);
    } else if (spec.dtype == c10::kBool) {
      t = at::randint(0, 2, spec.shape, gen, at::TensorOptions().dtype(at::kLong)).to(at::kBool);
    } else {
      t = at::randint(0, std::max<int64_t>(spec.high, 1), spec.shape, gen, at::TensorOptions().dtype(spec.dtype));
    }
    inputs.emplace_back(t.to(device));
  }
  return inputs;
}

}  // namespace autograph
