// Runs AOTInductor packages carried as tensors; see inductor_part.h.
#include "executor/inductor_part.h"

#include <c10/core/Device.h>
#include <torch/csrc/inductor/aoti_package/model_package_loader.h>

#include <nlohmann/json.hpp>

#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unistd.h>
#include <unordered_map>

#include "autograph/error.h"
#include "core/op_graph.h"  // ScalarTypeFromString
#include "executor/capture_keep_alive.h"

namespace autograph {
namespace {

using nlohmann::json;

constexpr const char* kFormat = "autograph-inductor-part";

json ParseSpec(std::string_view spec) {
  json parsed = json::parse(spec, nullptr, /*allow_exceptions=*/false);
  if (!parsed.is_object() || parsed.value("format", "") != kFormat || !parsed.contains("digest") ||
      !parsed["digest"].is_string() || !parsed.contains("outputs") || !parsed["outputs"].is_array())
    throw InputError("run_inductor_part: the spec is not an autograph-inductor-part spec (format, digest, outputs)");
  return parsed;
}

// The package's bytes written to a private file (the loader reads a path, and unpacks it into a
// directory of its own), loaded, and the file removed.
std::unique_ptr<torch::inductor::AOTIModelPackageLoader> Load(const at::Tensor& package, const std::string& device) {
  const char* tmp = std::getenv("TMPDIR");
  std::string path = std::string(tmp && *tmp ? tmp : "/tmp") + "/autograph-part-XXXXXX.pt2";
  const int fd = mkstemps(path.data(), 4);
  if (fd < 0) throw Error("run_inductor_part: cannot create a temporary file for the package in " + path);
  const auto* bytes = static_cast<const char*>(package.const_data_ptr());
  size_t written = 0;
  const size_t size = static_cast<size_t>(package.numel());
  while (written < size) {
    const ssize_t n = ::write(fd, bytes + written, size - written);
    if (n <= 0) break;
    written += static_cast<size_t>(n);
  }
  ::close(fd);
  struct Remove {
    std::string path;
    ~Remove() { std::remove(path.c_str()); }
  } remove{path};
  if (written != size) throw Error("run_inductor_part: cannot write the package to " + path + " (disk full?)");
  const c10::Device where(device);
  try {
    // On CUDA the container's thread-safe run waits (cudaEventSynchronize) for the previous run of its
    // one model instance to finish on the device: a host sync per part per call, and an error inside
    // a CUDA Graph capture ("operation not permitted when stream is capturing"). The single-threaded
    // run launches on the current stream and waits for nothing; Part::run_mutex serializes callers.
    return std::make_unique<torch::inductor::AOTIModelPackageLoader>(path, "model",
                                                                     /*run_single_threaded=*/where.is_cuda(),
                                                                     /*num_runners=*/1,
                                                                     where.is_cuda() ? where.index() : -1);
  } catch (const std::exception& e) {
    // The loader unpacks the package's libraries next to it: a full disk fails there, not above.
    const std::string why = e.what();
    if (why.find("write callback failed") != std::string::npos || why.find("No space left") != std::string::npos) {
      throw Error("run_inductor_part: the package cannot be unpacked in " + path.substr(0, path.rfind('/')) +
                  " (no space left there? free some, or point TMPDIR elsewhere): " + why);
    }
    throw Error("run_inductor_part: the package does not load (damaged, or compiled for another torch version or "
                "device; optimize the model again): " + why);
  }
}

// A spec resolved once: its package's loader (shared by every spec naming that digest) and the
// outputs it promises, so a call costs a lookup by the spec's text, not a JSON parse.
struct Part {
  std::string spec;  // the key of its entry (a view of this string: no copy per lookup)
  std::string digest;
  std::shared_ptr<torch::inductor::AOTIModelPackageLoader> loader;
  std::shared_ptr<std::mutex> run_mutex;  // one per loader: its model instance runs one call at a time
  std::vector<std::vector<int64_t>> shapes;
  std::vector<c10::ScalarType> dtypes;
};

// The parts of this process. A call holds its Part (and so its loader) by shared_ptr, so a release
// while it runs only drops the maps' references.
struct LoadedParts {
  struct Package {
    std::shared_ptr<torch::inductor::AOTIModelPackageLoader> loader;
    std::shared_ptr<std::mutex> run_mutex;
  };
  std::mutex mutex;
  std::unordered_map<std::string_view, std::shared_ptr<const Part>> parts;  // by spec text
  std::map<std::string, Package> loaders;  // by digest; every part's digest has its entry here
};

LoadedParts& ProcessParts() {
  static LoadedParts loaded;
  return loaded;
}

std::shared_ptr<const Part> PartFor(const at::Tensor& package, std::string_view spec) {
  LoadedParts& loaded = ProcessParts();
  std::lock_guard<std::mutex> lock(loaded.mutex);
  auto found = loaded.parts.find(spec);
  if (found != loaded.parts.end()) return found->second;
  const json parsed = ParseSpec(spec);
  auto part = std::make_shared<Part>();
  part->spec = std::string(spec);
  for (const json& output : parsed["outputs"]) {
    part->shapes.push_back(output.value("shape", std::vector<int64_t>{}));
    const std::string name = output.value("dtype", "");
    const std::optional<c10::ScalarType> dtype = ScalarTypeFromString(name);
    if (!dtype) throw InputError("run_inductor_part: the spec names an unknown dtype '" + name + "'");
    part->dtypes.push_back(*dtype);
  }
  part->digest = parsed["digest"].get<std::string>();
  auto by_digest = loaded.loaders.find(part->digest);
  if (by_digest == loaded.loaders.end()) {
    if (package.scalar_type() != at::kByte || package.dim() != 1 || !package.device().is_cpu() || !package.is_contiguous())
      throw InputError("run_inductor_part: the package must be a contiguous 1-d uint8 CPU tensor");
    // Entered only once loaded: a package that fails to load is not listed as loaded.
    const std::string device = parsed.value("device", "cpu");
    LoadedParts::Package fresh{Load(package, device), std::make_shared<std::mutex>()};
    by_digest = loaded.loaders.emplace(part->digest, std::move(fresh)).first;
  }
  part->loader = by_digest->second.loader;
  part->run_mutex = by_digest->second.run_mutex;
  const std::string_view key = part->spec;
  return loaded.parts.emplace(key, std::move(part)).first->second;
}

}  // namespace

std::vector<at::Tensor> RunInductorPart(const std::vector<at::Tensor>& inputs, const at::Tensor& package,
                                        std::string_view spec) {
  const std::shared_ptr<const Part> held = PartFor(package, spec);
  CaptureKeepAlive::Keep(held);  // a CUDA Graph being captured replays its kernels: held while the graph lives
  const Part& part = *held;
  std::vector<at::Tensor> outputs;
  {
    std::lock_guard<std::mutex> lock(*part.run_mutex);
    outputs = part.loader->run(inputs);  // null stream: the current one (CUDA)
  }
  if (outputs.size() != part.shapes.size())
    throw Error("run_inductor_part: the package returned " + std::to_string(outputs.size()) + " outputs, its spec lists " +
                std::to_string(part.shapes.size()) + " (a package of another part?)");
  // A size of -1 in the spec is any size (a package compiled for dynamic shapes).
  auto fits = [](c10::IntArrayRef sizes, const std::vector<int64_t>& spec) {
    if (sizes.size() != spec.size()) return false;
    for (size_t d = 0; d < spec.size(); ++d)
      if (spec[d] >= 0 && sizes[d] != spec[d]) return false;
    return true;
  };
  for (size_t i = 0; i < outputs.size(); ++i)
    if (!fits(outputs[i].sizes(), part.shapes[i]) || outputs[i].scalar_type() != part.dtypes[i])
      throw Error("run_inductor_part: output " + std::to_string(i) + " is " + c10::str(outputs[i].sizes()) + " " +
                  c10::toString(outputs[i].scalar_type()) + ", the spec says " +
                  c10::str(c10::IntArrayRef(part.shapes[i])) + " " + c10::toString(part.dtypes[i]));
  return outputs;
}

std::vector<std::string> LoadedInductorParts() {
  LoadedParts& loaded = ProcessParts();
  std::lock_guard<std::mutex> lock(loaded.mutex);
  std::vector<std::string> digests;
  for (const auto& [digest, _] : loaded.loaders) digests.push_back(digest);
  return digests;
}

int64_t ReleaseInductorParts(const std::vector<std::string>& digests) {
  LoadedParts& loaded = ProcessParts();
  std::lock_guard<std::mutex> lock(loaded.mutex);
  int64_t released = 0;
  for (const std::string& digest : digests) {
    auto it = loaded.loaders.find(digest);
    // A CUDA Graph that replays a part's kernels holds the part itself (CaptureKeepAlive): only the
    // process's reference goes here, and the container goes with the last graph holding it.
    if (it == loaded.loaders.end()) continue;
    loaded.loaders.erase(it);
    ++released;
  }
  for (auto it = loaded.parts.begin(); it != loaded.parts.end();) {
    if (!loaded.loaders.count(it->second->digest))  // a part of a released digest
      it = loaded.parts.erase(it);
    else
      ++it;
  }
  return released;
}

InductorPartCost InductorPartCostOf(std::string_view spec) {
  // Any compiled part's spec (Inductor's, OpenVINO's, ONNX Runtime's): each carries the FLOPs and kind of
  // what it replaces.
  const json parsed = json::parse(spec, nullptr, /*allow_exceptions=*/false);
  if (!parsed.is_object()) throw InputError("a compiled part's spec is not JSON");
  return {parsed.value("flops", 0.0), parsed.value("compute_bound", false)};
}

}  // namespace autograph
