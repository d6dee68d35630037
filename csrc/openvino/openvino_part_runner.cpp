// libautograph_openvino.so: runs autograph::run_openvino_part with OpenVINO's CPU plugin. Loading the
// library installs the runner (see executor/openvino_part.h); the runtime never links OpenVINO.
// Each package is compiled once per process (keyed by its spec, which names its digest; released by
// digest: ReleaseOpenVinoParts) with the latency hint and the inference precision its spec names
// (float32 unless it says bf16: on CPUs with bf16 units OpenVINO's own default would be bf16); its one
// infer request runs one call at a time, on tensors that wrap the caller's and the outputs' memory (no
// copies for static shapes).
#include <openvino/openvino.hpp>

#include <ATen/ATen.h>
#include <nlohmann/json.hpp>

#include <cstdint>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "autograph/error.h"
#include "core/op_graph.h"  // ScalarTypeFromString
#include "executor/openvino_part.h"

namespace autograph {
namespace {

using nlohmann::json;

constexpr const char* kFormat = "autograph-openvino-part";

ov::element::Type ElementOf(c10::ScalarType dtype) {
  switch (dtype) {
    case at::kFloat: return ov::element::f32;
    case at::kDouble: return ov::element::f64;
    case at::kHalf: return ov::element::f16;
    case at::kBFloat16: return ov::element::bf16;
    case at::kLong: return ov::element::i64;
    case at::kInt: return ov::element::i32;
    case at::kShort: return ov::element::i16;
    case at::kChar: return ov::element::i8;
    case at::kByte: return ov::element::u8;
    case at::kBool: return ov::element::boolean;
    default: throw InputError(std::string("run_openvino_part: dtype ") + c10::toString(dtype) + " has no OpenVINO type");
  }
}

c10::ScalarType ScalarTypeOf(const ov::element::Type& type) {
  for (c10::ScalarType t : {at::kFloat, at::kDouble, at::kHalf, at::kBFloat16, at::kLong, at::kInt, at::kShort,
                            at::kChar, at::kByte, at::kBool})
    if (ElementOf(t) == type) return t;
  throw Error("run_openvino_part: the part returns OpenVINO type " + type.get_type_name() + ", which torch lacks");
}

ov::Tensor Wrap(const at::Tensor& t) {
  return ov::Tensor(ElementOf(t.scalar_type()), ov::Shape(t.sizes().begin(), t.sizes().end()), t.data_ptr());
}

struct Compiled {
  std::string digest;  // the package's, as its spec names it
  ov::CompiledModel model;
  ov::InferRequest request;
  std::mutex mutex;  // one call at a time on the request
  std::vector<std::vector<int64_t>> shapes;  // from the spec; -1: any size
  std::vector<c10::ScalarType> dtypes;
  bool static_outputs = true;
};

ov::Core& TheCore() {
  static ov::Core core;
  return core;
}

// The parts compiled in this process. A call holds its part by shared_ptr, so a release while it
// runs only drops the map's reference.
struct CompiledParts {
  std::mutex mutex;
  std::map<std::string, std::shared_ptr<Compiled>> by_spec;  // by spec text
};

CompiledParts& ProcessParts() {
  static CompiledParts parts;
  return parts;
}

std::shared_ptr<Compiled> CompiledFor(const at::Tensor& package, std::string_view spec_text) {
  CompiledParts& compiled = ProcessParts();
  std::lock_guard<std::mutex> lock(compiled.mutex);
  std::string key(spec_text);
  if (auto it = compiled.by_spec.find(key); it != compiled.by_spec.end()) return it->second;

  const json spec = json::parse(spec_text, nullptr, /*allow_exceptions=*/false);
  if (!spec.is_object() || spec.value("format", "") != kFormat || !spec.contains("digest") ||
      !spec["digest"].is_string() || !spec.contains("outputs") || !spec["outputs"].is_array())
    throw InputError("run_openvino_part: the spec is not an autograph-openvino-part spec (format, digest, outputs)");
  // The precision the part computes in: float32 unless its spec says bf16 (the candidate the option
  // precision lowers, kept only where its outputs met the tolerance). OpenVINO's own default on a CPU with
  // bf16 instructions is bf16, so float32 is asked for explicitly. An int8 package (quantized by NNCF) runs
  // its quantized operators in INT8 and the rest in float32.
  const std::string precision_name = spec.value("precision", "fp32");
  if (precision_name != "fp32" && precision_name != "bf16" && precision_name != "int8")
    throw InputError("run_openvino_part: the spec's precision is '" + precision_name + "'; expected fp32, bf16 or int8");
  const ov::element::Type precision = precision_name == "bf16" ? ov::element::bf16 : ov::element::f32;
  auto part = std::make_shared<Compiled>();
  part->digest = spec["digest"].get<std::string>();
  for (const json& output : spec["outputs"]) {
    part->shapes.push_back(output.value("shape", std::vector<int64_t>{}));
    for (int64_t d : part->shapes.back()) part->static_outputs = part->static_outputs && d >= 0;
    const std::string name = output.value("dtype", "");
    const std::optional<c10::ScalarType> dtype = ScalarTypeFromString(name);
    if (!dtype) throw InputError("run_openvino_part: the spec names an unknown dtype '" + name + "'");
    part->dtypes.push_back(*dtype);
  }
  if (package.scalar_type() != at::kByte || package.dim() != 1 || !package.device().is_cpu() || !package.is_contiguous())
    throw InputError("run_openvino_part: the package must be a contiguous 1-d uint8 CPU tensor");
  const auto* bytes = static_cast<const char*>(package.data_ptr());
  const size_t size = static_cast<size_t>(package.numel());
  const size_t header = kOpenVinoPackageMagic.size() + 8;
  const bool tagged = size >= header && std::string_view(bytes, kOpenVinoPackageMagic.size()) == kOpenVinoPackageMagic;
  uint64_t xml_size = 0;
  if (tagged)
    for (int i = 7; i >= 0; --i) xml_size = (xml_size << 8) | static_cast<uint8_t>(bytes[kOpenVinoPackageMagic.size() + i]);
  if (!tagged || xml_size > size - header)
    throw InputError("run_openvino_part: the package is not an autograph OpenVINO package (damaged?)");
  const std::string xml(bytes + header, xml_size);
  ov::Tensor weights(ov::element::u8, ov::Shape{size - header - xml_size});
  if (weights.get_byte_size() > 0) std::memcpy(weights.data(), bytes + header + xml_size, weights.get_byte_size());
  try {
    std::shared_ptr<ov::Model> model = TheCore().read_model(xml, weights);
    part->model = TheCore().compile_model(model, "CPU", ov::hint::performance_mode(ov::hint::PerformanceMode::LATENCY),
                                          ov::hint::inference_precision(precision));
    part->request = part->model.create_infer_request();
  } catch (const ov::Exception& e) {
    throw Error(std::string("run_openvino_part: OpenVINO cannot compile the part (damaged, or made by another "
                            "OpenVINO version: optimize the model again): ") + e.what());
  }
  if (part->model.outputs().size() != part->shapes.size())
    throw Error("run_openvino_part: the package returns " + std::to_string(part->model.outputs().size()) +
                " outputs, its spec lists " + std::to_string(part->shapes.size()));
  compiled.by_spec.emplace(std::move(key), part);
  return part;
}

std::vector<std::string> Loaded() {
  CompiledParts& compiled = ProcessParts();
  std::lock_guard<std::mutex> lock(compiled.mutex);
  std::set<std::string> digests;
  for (const auto& [_, part] : compiled.by_spec) digests.insert(part->digest);
  return {digests.begin(), digests.end()};
}

int64_t Release(const std::vector<std::string>& digests) {
  const std::set<std::string> released(digests.begin(), digests.end());
  CompiledParts& compiled = ProcessParts();
  std::lock_guard<std::mutex> lock(compiled.mutex);
  std::set<std::string> found;
  for (auto it = compiled.by_spec.begin(); it != compiled.by_spec.end();) {
    if (released.count(it->second->digest)) {
      found.insert(it->second->digest);
      it = compiled.by_spec.erase(it);
    } else {
      ++it;
    }
  }
  return static_cast<int64_t>(found.size());
}

std::vector<at::Tensor> Run(const std::vector<at::Tensor>& inputs, const at::Tensor& package, std::string_view spec) {
  std::shared_ptr<Compiled> part = CompiledFor(package, spec);
  if (inputs.size() != part->model.inputs().size())
    throw InputError("run_openvino_part: " + std::to_string(inputs.size()) + " inputs for a part of " +
                     std::to_string(part->model.inputs().size()));
  std::vector<at::Tensor> held;  // contiguous CPU copies where the caller's are not
  for (const at::Tensor& t : inputs) {
    if (!t.device().is_cpu()) throw InputError("run_openvino_part: input on " + t.device().str() + "; OpenVINO parts run on the CPU");
    held.push_back(t.contiguous());
  }
  std::vector<at::Tensor> outputs;
  std::lock_guard<std::mutex> lock(part->mutex);
  try {
    for (size_t i = 0; i < held.size(); ++i) part->request.set_input_tensor(i, Wrap(held[i]));
    if (part->static_outputs) {
      for (size_t i = 0; i < part->shapes.size(); ++i) {
        outputs.push_back(at::empty(part->shapes[i], at::TensorOptions().dtype(part->dtypes[i])));
        part->request.set_output_tensor(i, Wrap(outputs.back()));
      }
      part->request.infer();
    } else {
      part->request.infer();
      for (size_t i = 0; i < part->shapes.size(); ++i) {
        const ov::Tensor out = part->request.get_output_tensor(i);
        const ov::Shape shape = out.get_shape();
        at::Tensor t = at::empty(std::vector<int64_t>(shape.begin(), shape.end()),
                                 at::TensorOptions().dtype(ScalarTypeOf(out.get_element_type())));
        if (out.get_byte_size() > 0) std::memcpy(t.data_ptr(), out.data(), out.get_byte_size());
        outputs.push_back(std::move(t));
      }
    }
  } catch (const ov::Exception& e) {
    throw Error(std::string("run_openvino_part: OpenVINO failed running the part (inputs of other shapes or types "
                            "than it was compiled for?): ") + e.what());
  }
  for (size_t i = 0; i < outputs.size(); ++i)
    if (outputs[i].scalar_type() != part->dtypes[i])
      throw Error("run_openvino_part: output " + std::to_string(i) + " is " + c10::toString(outputs[i].scalar_type()) +
                  ", the spec says " + c10::toString(part->dtypes[i]));
  return outputs;
}

// Installs the runner when the library loads.
const bool installed = [] {
  SetOpenVinoPartRunner({Run, Loaded, Release});
  return true;
}();

}  // namespace
}  // namespace autograph
