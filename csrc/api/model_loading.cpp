#include "autograph/model_loading.h"

#include <ATen/ATen.h>
#include <torch/csrc/jit/serialization/import.h>
#include <torch/script.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "autograph/error.h"
#include "executor/clone_tensors.h"

namespace autograph {

namespace fs = std::filesystem;

torch::jit::Module LoadModule(const std::string& path) {
  std::error_code ec;
  if (!fs::exists(path, ec)) throw ModelLoadError("cannot open '" + path + "': no such file");
  if (fs::is_directory(path, ec)) throw ModelLoadError("cannot open '" + path + "': it is a directory, not a model file");
  std::ifstream probe(path, std::ios::binary);
  if (!probe) throw ModelLoadError("cannot open '" + path + "': permission denied or unreadable");
  if (path.size() > 4 && path.compare(path.size() - 4, 4, ".pt2") == 0)  // torch.export / AOTInductor, not TorchScript
    throw ModelLoadError("'" + path + "' is a torch.export program (.pt2): the export path runs from Python; use the "
                         "`autograph` command of the installed package (pip install .), which takes .pt2 files, or "
                         "autograph.optimize(torch.export.load(path)) in Python");
  try {
    return torch::jit::load(path);
  } catch (const std::exception& e) {
    const std::string first = FirstLineOf(e);
    if (first.find("Unknown builtin op") != std::string::npos)  // a custom operator's library is not loaded
      throw ModelLoadError("'" + path + "' calls an operator this process does not know (" + first +
                           "); load the library that registers it first: autograph --load-library LIB.so, "
                           "or torch.ops.load_library(LIB.so) in Python");
    throw ModelLoadError("'" + path + "' is not a loadable TorchScript file (" + first +
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

namespace {

using Json = nlohmann::ordered_json;  // dict arguments keep their keys' order

InputSpec SpecFromJson(const Json& entry, const std::string& where) {
  InputSpec spec;
  auto fail = [&](const std::string& what) {
    throw InputError(where + " " + what +
                     "; an argument is a tensor {\"shape\": [1,3,224,224], \"dtype\": \"float32\"}, "
                     "{\"tuple\": [...]}, {\"list\": [...]}, {\"dict\": {\"key\": ...}}, a number, true/false or null");
  };
  if (entry.is_null()) {
    spec.kind = InputSpec::Kind::None;
  } else if (entry.is_boolean()) {
    spec.kind = InputSpec::Kind::Bool;
    spec.value = entry.get<bool>();
  } else if (entry.is_number_integer()) {
    spec.kind = InputSpec::Kind::Int;
    spec.value = static_cast<double>(entry.get<int64_t>());
  } else if (entry.is_number()) {
    spec.kind = InputSpec::Kind::Float;
    spec.value = entry.get<double>();
  } else if (!entry.is_object()) {
    fail("is " + std::string(entry.type_name()));
  } else if (entry.contains("shape")) {
    spec.shape = entry.at("shape").get<std::vector<int64_t>>();
    if (entry.contains("dtype")) spec.dtype = ParseDtype(entry.at("dtype").get<std::string>());
    if (entry.contains("high")) spec.high = entry.at("high").get<int64_t>();
  } else if (entry.size() == 1 && (entry.contains("tuple") || entry.contains("list"))) {
    const bool tuple = entry.contains("tuple");
    spec.kind = tuple ? InputSpec::Kind::Tuple : InputSpec::Kind::List;
    const Json& items = entry.begin().value();
    if (!items.is_array()) fail("has a " + std::string(tuple ? "tuple" : "list") + " that is not an array");
    for (size_t i = 0; i < items.size(); ++i)
      spec.elements.push_back(SpecFromJson(items[i], where + "[" + std::to_string(i) + "]"));
  } else if (entry.size() == 1 && entry.contains("dict")) {
    spec.kind = InputSpec::Kind::Dict;
    const Json& items = entry.at("dict");
    if (!items.is_object()) fail("has a dict that is not an object");
    for (const auto& [key, value] : items.items()) {
      spec.keys.push_back(key);
      spec.elements.push_back(SpecFromJson(value, where + "[\"" + key + "\"]"));
    }
  } else {
    fail("is an object with neither \"shape\" nor one of \"tuple\", \"list\", \"dict\"");
  }
  return spec;
}

// The value of one spec; tensors drawn from `gen` depth first.
c10::IValue ExampleValue(const InputSpec& spec, at::Generator& gen, c10::Device device) {
  using Kind = InputSpec::Kind;
  switch (spec.kind) {
    case Kind::Tensor: {
      at::Tensor t;
      if (c10::isFloatingType(spec.dtype)) {
        t = at::randn(spec.shape, gen, at::TensorOptions().dtype(at::kFloat)).to(spec.dtype);
      } else if (spec.dtype == c10::kBool) {
        t = at::randint(0, 2, spec.shape, gen, at::TensorOptions().dtype(at::kLong)).to(at::kBool);
      } else {
        t = at::randint(0, std::max<int64_t>(spec.high, 1), spec.shape, gen, at::TensorOptions().dtype(spec.dtype));
      }
      return t.to(device);
    }
    case Kind::Int: return static_cast<int64_t>(spec.value);
    case Kind::Float: return spec.value;
    case Kind::Bool: return spec.value != 0;
    case Kind::None: return c10::IValue();
    default: break;
  }
  std::vector<c10::IValue> elements;
  for (const InputSpec& e : spec.elements) elements.push_back(ExampleValue(e, gen, device));
  if (spec.kind == Kind::Tuple) return c10::ivalue::Tuple::create(std::move(elements));
  // Lists and dicts hold one element type: the one their elements share.
  c10::TypePtr type = elements.empty() ? c10::TensorType::get() : elements[0].type();
  for (const c10::IValue& e : elements) {
    auto unified = c10::unifyTypes(type, e.type());
    if (!unified) throw InputError("example input: a list or dict mixes " + type->str() + " and " + e.type()->str());
    type = *unified;
  }
  if (spec.kind == Kind::List) {
    c10::impl::GenericList list(type);
    for (c10::IValue& e : elements) list.push_back(std::move(e));
    return list;
  }
  c10::impl::GenericDict dict(c10::StringType::get(), type);
  for (size_t i = 0; i < elements.size(); ++i) dict.insert(spec.keys[i], std::move(elements[i]));
  return dict;
}

}  // namespace

std::vector<InputSpec> ReadInputSpecs(const std::string& json_path) {
  std::ifstream in(json_path);
  if (!in) throw InputError("cannot open input description '" + json_path + "'");
  std::vector<InputSpec> specs;
  try {
    Json doc = Json::parse(in);
    const Json& inputs = doc.at("inputs");
    for (size_t i = 0; i < inputs.size(); ++i)
      specs.push_back(SpecFromJson(inputs[i], "input description '" + json_path + "': input " + std::to_string(i)));
  } catch (const nlohmann::json::exception& e) {
    throw InputError("malformed input description '" + json_path + "': " + e.what() +
                     "; expected {\"inputs\": [{\"shape\": [1,3,224,224], \"dtype\": \"float32\"}]}");
  }
  return specs;
}

void ForEachTensorSpec(std::vector<InputSpec>& specs, const std::function<void(InputSpec&)>& fn) {
  for (InputSpec& spec : specs) {
    if (spec.kind == InputSpec::Kind::Tensor) fn(spec);
    ForEachTensorSpec(spec.elements, fn);
  }
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
  for (const c10::IValue& v : values) out.push_back(MapTensors(v, [&](const at::Tensor& t) { return t.to(device); }));
  return out;
}

std::vector<c10::IValue> MakeExampleInputs(const std::vector<InputSpec>& specs, c10::Device device, uint64_t seed) {
  at::Generator gen = at::detail::createCPUGenerator(seed);
  std::vector<c10::IValue> inputs;
  for (const InputSpec& spec : specs) inputs.push_back(ExampleValue(spec, gen, device));
  return inputs;
}

}  // namespace autograph
