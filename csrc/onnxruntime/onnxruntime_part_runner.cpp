// libautograph_onnxruntime.so: runs autograph::run_onnxruntime_part with ONNX Runtime's CPU provider.
// Loading the library installs the runner (see executor/onnxruntime_part.h); the runtime never links
// ONNX Runtime. Each package is compiled into a session once per process (keyed by its spec, which
// names its digest; released by digest: ReleaseOnnxRuntimeParts); a session runs one call at a time,
// on values that wrap the caller's and the outputs' memory (no copies where the spec's shapes are
// static).
//
// ONNX Runtime's library is opened on first use (dlopen), not linked: the onnxruntime wheel ships it
// as libonnxruntime.so.<version> while its soname is libonnxruntime.so.1, a file the wheel does not
// have, so a linked library would not load. Only its C API is used, which is ABI-stable: the headers'
// API version is asked for, and any later ONNX Runtime provides it.
#define ORT_API_MANUAL_INIT
#include <onnxruntime_cxx_api.h>
#include <onnxruntime_session_options_config_keys.h>

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <dlfcn.h>
#include <glob.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
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
#include "executor/onnxruntime_part.h"

#ifndef AUTOGRAPH_ONNXRUNTIME_LIBRARY_PATH
#define AUTOGRAPH_ONNXRUNTIME_LIBRARY_PATH "libonnxruntime.so.1"
#endif

namespace autograph {
namespace {

using nlohmann::json;

constexpr const char* kFormat = "autograph-onnxruntime-part";
constexpr const char* kDoAgain =
    "pip install onnxruntime beside torch, or optimize the model again with onnxruntime=False";

// --- ONNX Runtime's library ---------------------------------------------------------------------

// Where libonnxruntime is looked for, in order: AUTOGRAPH_ONNXRUNTIME_LIBRARY; the onnxruntime package
// beside this library's (site-packages/autograph/lib/ -> site-packages/onnxruntime/capi/); the file
// found when this library was built; the loader's own search.
std::vector<std::string> LibraryCandidates() {
  std::vector<std::string> paths;
  if (const char* path = std::getenv("AUTOGRAPH_ONNXRUNTIME_LIBRARY"); path && *path) paths.emplace_back(path);
  Dl_info self{};
  if (dladdr(reinterpret_cast<void*>(&LibraryCandidates), &self) && self.dli_fname) {
    std::string dir(self.dli_fname);
    dir = dir.substr(0, dir.find_last_of('/') + 1);
    glob_t found{};
    if (glob((dir + "../../onnxruntime/capi/libonnxruntime.so.*").c_str(), 0, nullptr, &found) == 0)
      for (size_t i = 0; i < found.gl_pathc; ++i) paths.emplace_back(found.gl_pathv[i]);
    globfree(&found);
  }
  paths.emplace_back(AUTOGRAPH_ONNXRUNTIME_LIBRARY_PATH);
  paths.emplace_back("libonnxruntime.so.1");
  return paths;
}

// Opens ONNX Runtime once per process (RTLD_LOCAL: its symbols stay its own, beside the copy that the
// onnxruntime Python module links statically) and hands its API to the C++ wrappers. Never closed.
const OrtApi* Api() {
  static const std::string failure = [] {
    std::string tried;
    for (const std::string& path : LibraryCandidates()) {
      void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
      if (!handle) {
        const char* why = dlerror();  // names the path
        tried += "\n  " + (why ? std::string(why) : path + ": cannot be opened");
        continue;
      }
      using GetApiBase = const OrtApiBase* (*)();
      auto get_api_base = reinterpret_cast<GetApiBase>(dlsym(handle, "OrtGetApiBase"));
      const OrtApiBase* base = get_api_base ? get_api_base() : nullptr;
      const OrtApi* api = base ? base->GetApi(ORT_API_VERSION) : nullptr;
      if (!api) {
        tried += "\n  " + path + ": " +
                 (base ? "ONNX Runtime " + std::string(base->GetVersionString()) + " lacks C API version " +
                             std::to_string(ORT_API_VERSION) + " (ONNX Runtime 1." + std::to_string(ORT_API_VERSION) +
                             " or later is needed)"
                       : std::string("not ONNX Runtime's library (no OrtGetApiBase)"));
        dlclose(handle);
        continue;
      }
      Ort::InitApi(api);
      return std::string();
    }
    return "run_onnxruntime_part: ONNX Runtime's library was not found or does not fit:" + tried + "\n" + kDoAgain;
  }();
  if (!failure.empty()) throw Error(failure);
  return &Ort::GetApi();
}

// One environment for the process. Never destroyed: at exit ONNX Runtime's library may be finalized
// before this one's statics, and the sessions (also kept) must not outlive it.
Ort::Env& TheEnv() {
  static Ort::Env* env = new Ort::Env(ORT_LOGGING_LEVEL_WARNING, "autograph");
  return *env;
}

// --- Types --------------------------------------------------------------------------------------

ONNXTensorElementDataType ElementOf(c10::ScalarType dtype) {
  switch (dtype) {
    case at::kFloat: return ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT;
    case at::kDouble: return ONNX_TENSOR_ELEMENT_DATA_TYPE_DOUBLE;
    case at::kHalf: return ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT16;
    case at::kBFloat16: return ONNX_TENSOR_ELEMENT_DATA_TYPE_BFLOAT16;
    case at::kLong: return ONNX_TENSOR_ELEMENT_DATA_TYPE_INT64;
    case at::kInt: return ONNX_TENSOR_ELEMENT_DATA_TYPE_INT32;
    case at::kShort: return ONNX_TENSOR_ELEMENT_DATA_TYPE_INT16;
    case at::kChar: return ONNX_TENSOR_ELEMENT_DATA_TYPE_INT8;
    case at::kByte: return ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT8;
    case at::kBool: return ONNX_TENSOR_ELEMENT_DATA_TYPE_BOOL;
    default: return ONNX_TENSOR_ELEMENT_DATA_TYPE_UNDEFINED;
  }
}

std::optional<c10::ScalarType> ScalarTypeOf(ONNXTensorElementDataType type) {
  for (c10::ScalarType t : {at::kFloat, at::kDouble, at::kHalf, at::kBFloat16, at::kLong, at::kInt, at::kShort,
                            at::kChar, at::kByte, at::kBool})
    if (ElementOf(t) == type) return t;
  return std::nullopt;
}

std::string TypeName(ONNXTensorElementDataType type) {
  const std::optional<c10::ScalarType> t = ScalarTypeOf(type);
  return t ? c10::toString(*t) : "ONNX element type " + std::to_string(static_cast<int>(type));
}

// A value over the tensor's own memory (contiguous, CPU).
Ort::Value Wrap(const Ort::MemoryInfo& cpu, const at::Tensor& t) {
  static char no_bytes = 0;  // an empty tensor may have no memory; ONNX Runtime wants an address
  void* data = t.numel() > 0 ? t.data_ptr() : &no_bytes;
  return Ort::Value::CreateTensor(cpu, data, t.nbytes(), t.sizes().data(), t.sizes().size(), ElementOf(t.scalar_type()));
}

// --- Compiled parts -----------------------------------------------------------------------------

struct Compiled {
  std::string digest;  // the package's, as its spec names it
  // Made only once ONNX Runtime is open: even an empty wrapper calls into it when destroyed.
  std::unique_ptr<Ort::Session> session;
  std::mutex mutex;  // one call at a time on the session
  std::vector<std::string> input_names, output_names;
  std::vector<const char*> input_name_ptrs, output_name_ptrs;
  std::vector<ONNXTensorElementDataType> input_types;
  std::vector<std::vector<int64_t>> shapes;  // from the spec; -1: any size
  std::vector<c10::ScalarType> dtypes;
  bool spinning = false;  // the spec's "spinning": its pool may spin between its operators' parallel work
};

// The parts compiled in this process. A call holds its part by shared_ptr, so a release while it
// runs only drops the map's reference.
struct CompiledParts {
  std::mutex mutex;
  std::map<std::string, std::shared_ptr<Compiled>> by_spec;  // by spec text
};

CompiledParts& ProcessParts() {
  static CompiledParts* parts = new CompiledParts;  // kept at exit, like the environment (TheEnv)
  return *parts;
}

// The spec's digest and outputs into `part`; the other fields are checked.
void ReadSpec(std::string_view spec_text, Compiled& part) {
  const json spec = json::parse(spec_text, nullptr, /*allow_exceptions=*/false);
  if (!spec.is_object() || spec.value("format", "") != kFormat || !spec.contains("digest") ||
      !spec["digest"].is_string() || !spec.contains("outputs") || !spec["outputs"].is_array())
    throw InputError("run_onnxruntime_part: the spec is not an autograph-onnxruntime-part spec (format, digest, "
                     "outputs): optimize the model again");
  const std::string device = spec.value("device", "cpu");
  if (device != "cpu")
    throw InputError("run_onnxruntime_part: the spec's device is '" + device + "'; ONNX Runtime parts run on the cpu");
  // float32, or int8: a model quantized to QDQ form (its quantized operators' inputs and weights INT8),
  // which the session runs as it is.
  const std::string precision = spec.value("precision", "fp32");
  if (precision != "fp32" && precision != "int8")
    throw InputError("run_onnxruntime_part: the spec's precision is '" + precision +
                     "'; ONNX Runtime parts run in fp32 or int8: optimize the model again");
  part.digest = spec["digest"].get<std::string>();
  if (spec.contains("spinning") && !spec["spinning"].is_boolean())
    throw InputError("run_onnxruntime_part: the spec's spinning is not a bool: optimize the model again");
  part.spinning = spec.value("spinning", false);
  for (const json& output : spec["outputs"]) {
    if (!output.is_object() || !output.contains("shape") || !output["shape"].is_array())
      throw InputError("run_onnxruntime_part: an output of the spec has no shape: optimize the model again");
    for (const json& d : output["shape"])
      if (!d.is_number_integer() || d.get<int64_t>() < -1)
        throw InputError("run_onnxruntime_part: the spec's output shape " + output["shape"].dump() +
                         " is not sizes (-1: any)");
    part.shapes.push_back(output["shape"].get<std::vector<int64_t>>());
    const std::string name = output.value("dtype", "");
    const std::optional<c10::ScalarType> dtype = ScalarTypeFromString(name);
    if (!dtype || ElementOf(*dtype) == ONNX_TENSOR_ELEMENT_DATA_TYPE_UNDEFINED)
      throw InputError("run_onnxruntime_part: the spec names dtype '" + name + "', which ONNX Runtime parts lack");
    part.dtypes.push_back(*dtype);
  }
}

// The package's model (after the magic), or InputError.
std::string_view ModelBytes(const at::Tensor& package) {
  if (package.scalar_type() != at::kByte || package.dim() != 1 || !package.device().is_cpu() || !package.is_contiguous())
    throw InputError("run_onnxruntime_part: the package must be a contiguous 1-d uint8 CPU tensor");
  const std::string_view bytes(static_cast<const char*>(package.data_ptr()), static_cast<size_t>(package.numel()));
  if (bytes.size() <= kOnnxRuntimePackageMagic.size() ||
      bytes.substr(0, kOnnxRuntimePackageMagic.size()) != kOnnxRuntimePackageMagic)
    throw InputError("run_onnxruntime_part: the package is not an autograph ONNX Runtime package (no AGORT1 header: "
                     "damaged, or another compiler's): optimize the model again");
  return bytes.substr(kOnnxRuntimePackageMagic.size());
}

// The options every part's session runs with: the program's intra-op threads at creation, no
// inter-op pool, and a pool that sleeps between calls unless `spinning`: a spinning pool takes the cores
// that ATen's threads (and other parts') need between this part's calls (a program 2.5-3x slower where
// ATen's matmuls followed each call), and saves a quarter of a small model's time where the part is the
// whole program (its operators hand work to threads that are awake).
Ort::SessionOptions PartOptions(bool spinning) {
  Ort::SessionOptions options;
  options.SetGraphOptimizationLevel(GraphOptimizationLevel::ORT_ENABLE_ALL);
  options.SetIntraOpNumThreads(std::max(1, at::get_num_threads()));
  options.SetInterOpNumThreads(1);
  options.SetExecutionMode(ExecutionMode::ORT_SEQUENTIAL);
  options.AddConfigEntry(kOrtSessionOptionsConfigAllowIntraOpSpinning, spinning ? "1" : "0");
  return options;  // the CPU provider only: no other is appended
}

// The session's inputs and outputs, checked against the spec.
void ReadModelSignature(Compiled& part) {
  Ort::AllocatorWithDefaultOptions allocator;
  for (size_t i = 0; i < part.session->GetInputCount(); ++i) {
    part.input_names.emplace_back(part.session->GetInputNameAllocated(i, allocator).get());
    const Ort::TypeInfo info = part.session->GetInputTypeInfo(i);
    if (info.GetONNXType() != ONNX_TYPE_TENSOR)
      throw Error("run_onnxruntime_part: the part's input " + std::to_string(i) + " is not a tensor: optimize the model again");
    part.input_types.push_back(info.GetTensorTypeAndShapeInfo().GetElementType());
  }
  const size_t outputs = part.session->GetOutputCount();
  if (outputs != part.shapes.size())
    throw Error("run_onnxruntime_part: the package returns " + std::to_string(outputs) + " outputs, its spec lists " +
                std::to_string(part.shapes.size()) + ": optimize the model again");
  for (size_t i = 0; i < outputs; ++i) {
    part.output_names.emplace_back(part.session->GetOutputNameAllocated(i, allocator).get());
    const Ort::TypeInfo info = part.session->GetOutputTypeInfo(i);
    const ONNXTensorElementDataType type =
        info.GetONNXType() == ONNX_TYPE_TENSOR ? info.GetTensorTypeAndShapeInfo().GetElementType()
                                               : ONNX_TENSOR_ELEMENT_DATA_TYPE_UNDEFINED;
    if (type != ElementOf(part.dtypes[i]))
      throw Error("run_onnxruntime_part: the package's output " + std::to_string(i) + " is " + TypeName(type) +
                  ", its spec says " + c10::toString(part.dtypes[i]) + ": optimize the model again");
  }
  for (const std::string& name : part.input_names) part.input_name_ptrs.push_back(name.c_str());
  for (const std::string& name : part.output_names) part.output_name_ptrs.push_back(name.c_str());
}

std::shared_ptr<Compiled> CompiledFor(const at::Tensor& package, std::string_view spec_text) {
  CompiledParts& compiled = ProcessParts();
  std::lock_guard<std::mutex> lock(compiled.mutex);
  std::string key(spec_text);
  if (auto it = compiled.by_spec.find(key); it != compiled.by_spec.end()) return it->second;

  auto part = std::make_shared<Compiled>();
  ReadSpec(spec_text, *part);
  const std::string_view model = ModelBytes(package);
  Api();
  try {
    part->session = std::make_unique<Ort::Session>(TheEnv(), model.data(), model.size(), PartOptions(part->spinning));
  } catch (const Ort::Exception& e) {
    throw Error(std::string("run_onnxruntime_part: ONNX Runtime cannot load the part (damaged, or an ONNX model this "
                            "ONNX Runtime cannot run: optimize the model again): ") + e.what());
  }
  try {
    ReadModelSignature(*part);
  } catch (const Ort::Exception& e) {
    throw Error(std::string("run_onnxruntime_part: ONNX Runtime cannot describe the part: ") + e.what());
  }
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

// --- Running ------------------------------------------------------------------------------------

// The caller's inputs as contiguous CPU tensors of the types the part takes (copies only where they
// are not contiguous).
std::vector<at::Tensor> CheckedInputs(const Compiled& part, const std::vector<at::Tensor>& inputs) {
  if (inputs.size() != part.input_types.size())
    throw InputError("run_onnxruntime_part: " + std::to_string(inputs.size()) + " inputs for a part of " +
                     std::to_string(part.input_types.size()));
  std::vector<at::Tensor> held;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const at::Tensor& t = inputs[i];
    if (!t.device().is_cpu())
      throw InputError("run_onnxruntime_part: input " + std::to_string(i) + " is on " + t.device().str() +
                       "; ONNX Runtime parts run on the CPU");
    if (ElementOf(t.scalar_type()) != part.input_types[i])
      throw InputError("run_onnxruntime_part: input " + std::to_string(i) + " is " + c10::toString(t.scalar_type()) +
                       ", the part takes " + TypeName(part.input_types[i]));
    held.push_back(t.contiguous());
  }
  return held;
}

std::vector<at::Tensor> Run(const std::vector<at::Tensor>& inputs, const at::Tensor& package, std::string_view spec) {
  std::shared_ptr<Compiled> part = CompiledFor(package, spec);
  const std::vector<at::Tensor> held = CheckedInputs(*part, inputs);
  std::vector<at::Tensor> outputs(part->shapes.size());
  try {
    static const Ort::MemoryInfo& cpu =  // kept at exit, like the environment (TheEnv)
        *new Ort::MemoryInfo(Ort::MemoryInfo::CreateCpu(OrtDeviceAllocator, OrtMemTypeDefault));
    std::vector<Ort::Value> in, out;
    for (const at::Tensor& t : held) in.push_back(Wrap(cpu, t));
    for (size_t i = 0; i < outputs.size(); ++i) {
      const bool known = std::all_of(part->shapes[i].begin(), part->shapes[i].end(), [](int64_t d) { return d >= 0; });
      if (known) outputs[i] = at::empty(part->shapes[i], at::TensorOptions().dtype(part->dtypes[i]));
      out.push_back(known ? Wrap(cpu, outputs[i]) : Ort::Value(nullptr));  // null: ONNX Runtime allocates it
    }
    {
      std::lock_guard<std::mutex> lock(part->mutex);
      part->session->Run(Ort::RunOptions(nullptr), part->input_name_ptrs.data(), in.data(), in.size(),
                        part->output_name_ptrs.data(), out.data(), out.size());
    }
    for (size_t i = 0; i < outputs.size(); ++i) {
      if (outputs[i].defined()) continue;
      // A size known only now: copied out of the value ONNX Runtime allocated.
      const Ort::TensorTypeAndShapeInfo info = out[i].GetTensorTypeAndShapeInfo();
      outputs[i] = at::empty(info.GetShape(), at::TensorOptions().dtype(part->dtypes[i]));
      if (info.GetElementType() != ElementOf(part->dtypes[i]))
        throw Error("run_onnxruntime_part: output " + std::to_string(i) + " is " + TypeName(info.GetElementType()) +
                    ", the spec says " + c10::toString(part->dtypes[i]));
      if (outputs[i].nbytes() > 0) std::memcpy(outputs[i].data_ptr(), out[i].GetTensorRawData(), outputs[i].nbytes());
    }
  } catch (const Ort::Exception& e) {
    throw Error(std::string("run_onnxruntime_part: ONNX Runtime failed running the part (inputs of other shapes "
                            "than it was exported for?): ") + e.what());
  }
  return outputs;
}

// Installs the runner when the library loads; ONNX Runtime itself is opened by the first part.
const bool installed = [] {
  SetOnnxRuntimePartRunner({Run, Loaded, Release});
  return true;
}();

}  // namespace
}  // namespace autograph
