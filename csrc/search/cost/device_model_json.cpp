// JSON form of a DeviceModel, so that calibrated efficiency factors can be stored and reloaded.
#include <nlohmann/json.hpp>

#include <algorithm>
#include <fstream>

#include "search/cost/device_model.h"

namespace autograph {

namespace {

constexpr int kVersion = 2;  // 2 added stitch_overhead_us and dispatch_per_group; version 1 files read with 0, false

[[noreturn]] void Fail(const std::string& path, const std::string& what) {
  throw Error("device model JSON: " + path + " " + what);
}

std::string Describe(const nlohmann::json& value) {
  if (value.is_structured()) return std::string("an ") + value.type_name();
  return value.dump();
}

// Reads an object's members by name, rejecting keys nobody asked for once done, so that a misspelt
// factor is an error rather than silently left at its default.
class ObjectReader {
 public:
  ObjectReader(const nlohmann::json& object, std::string path) : object_(object), path_(std::move(path)) {
    if (!object_.is_object()) Fail(path_, "is " + Describe(object_) + "; expected an object");
  }

  const nlohmann::json& Member(const char* key) {
    read_.emplace_back(key);
    auto it = object_.find(key);
    if (it == object_.end()) Fail(path_, std::string("has no \"") + key + "\"");
    return *it;
  }

  std::string String(const char* key) {
    const auto& value = Member(key);
    if (!value.is_string()) Fail(Path(key), "is " + Describe(value) + "; expected a string");
    return value.get<std::string>();
  }

  double Positive(const char* key) {
    const auto& value = Member(key);
    if (!value.is_number() || !(value.get<double>() > 0))
      Fail(Path(key), "is " + Describe(value) + "; expected a positive number");
    return value.get<double>();
  }

  double Fraction(const char* key) {
    const double value = Positive(key);
    if (value > 1) Fail(Path(key), "is " + std::to_string(value) + "; an efficiency is in (0, 1]");
    return value;
  }

  int PositiveInt(const char* key) {
    const auto& value = Member(key);
    if (!value.is_number_integer() || value.get<int64_t>() < 1 || value.get<int64_t>() > 1'000'000'000)
      Fail(Path(key), "is " + Describe(value) + "; expected a positive integer");
    return value.get<int>();
  }

  std::string Path(const char* key) const { return path_ == "the document" ? key : path_ + "." + key; }

  void RequireNoOtherKeys() const {
    for (auto it = object_.begin(); it != object_.end(); ++it)
      if (std::find(read_.begin(), read_.end(), it.key()) == read_.end())
        Fail(path_, "has unknown key \"" + it.key() + "\"");
  }

 private:
  const nlohmann::json& object_;
  std::string path_;
  std::vector<std::string> read_;
};

}  // namespace

nlohmann::json DeviceModelToJson(const DeviceModel& d) {
  return {{"version", kVersion},
          {"name", d.name},
          {"sms", d.sms},
          {"fp32_tflops", d.fp32_tflops},
          {"tf32_tflops", d.tf32_tflops},
          {"fp16_tflops", d.fp16_tflops},
          {"memory_gbps", d.memory_gbps},
          {"launch_us", d.launch_us},
          {"sync_us", d.sync_us},
          {"stitch_overhead_us", d.stitch_overhead_us},
          {"max_concurrent_kernels", d.max_concurrent_kernels},
          {"dispatch_per_group", d.dispatch_per_group},
          {"efficiency",
           {{"gemm", d.gemm_efficiency},
            {"vector", d.vector_efficiency},
            {"memory", d.memory_efficiency},
            {"sm_bandwidth_share", d.sm_bandwidth_share}}},
          {"granularity", {{"gemm_tile", d.gemm_tile}, {"elementwise_block_elements", d.elementwise_block_elements}}}};
}

DeviceModel DeviceModelFromJson(const nlohmann::json& json) {
  ObjectReader doc(json, "the document");
  const auto& version = doc.Member("version");
  if (!version.is_number_integer() || version < 1 || version > kVersion)
    Fail("version", "is " + Describe(version) + "; this build reads versions 1 to " + std::to_string(kVersion));
  DeviceModel d;
  d.name = doc.String("name");
  d.sms = doc.PositiveInt("sms");
  d.fp32_tflops = doc.Positive("fp32_tflops");
  d.tf32_tflops = doc.Positive("tf32_tflops");
  d.fp16_tflops = doc.Positive("fp16_tflops");
  d.memory_gbps = doc.Positive("memory_gbps");
  // Overheads may be zero (an idealized device), never negative.
  std::vector<std::pair<const char*, double*>> overheads = {{"launch_us", &d.launch_us}, {"sync_us", &d.sync_us}};
  if (version.get<int>() >= 2) overheads.emplace_back("stitch_overhead_us", &d.stitch_overhead_us);
  for (auto [key, field] : overheads) {
    const auto& value = doc.Member(key);
    if (!value.is_number() || !(value.get<double>() >= 0))
      Fail(key, "is " + Describe(value) + "; expected a non-negative number of microseconds");
    *field = value.get<double>();
  }
  d.max_concurrent_kernels = doc.PositiveInt("max_concurrent_kernels");
  if (version.get<int>() >= 2) {
    const auto& value = doc.Member("dispatch_per_group");
    if (!value.is_boolean()) Fail("dispatch_per_group", "is " + Describe(value) + "; expected true or false");
    d.dispatch_per_group = value.get<bool>();
  }

  ObjectReader efficiency(doc.Member("efficiency"), "efficiency");
  d.gemm_efficiency = efficiency.Fraction("gemm");
  d.vector_efficiency = efficiency.Fraction("vector");
  d.memory_efficiency = efficiency.Fraction("memory");
  d.sm_bandwidth_share = efficiency.Positive("sm_bandwidth_share");
  efficiency.RequireNoOtherKeys();

  ObjectReader granularity(doc.Member("granularity"), "granularity");
  d.gemm_tile = granularity.PositiveInt("gemm_tile");
  d.elementwise_block_elements = granularity.PositiveInt("elementwise_block_elements");
  granularity.RequireNoOtherKeys();

  doc.RequireNoOtherKeys();
  return d;
}

void SaveDeviceModel(const DeviceModel& device, const std::string& path) {
  std::ofstream out(path);
  if (!out) throw Error("cannot write device model to \"" + path + "\"");
  out << DeviceModelToJson(device).dump(2) << "\n";
  if (!out) throw Error("failed writing device model to \"" + path + "\"");
}

DeviceModel LoadDeviceModel(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw Error("cannot read device model \"" + path + "\": no such readable file");
  nlohmann::json json;
  try {
    in >> json;
  } catch (const nlohmann::json::exception& e) {
    throw Error("device model \"" + path + "\" is not valid JSON: " + e.what());
  }
  try {
    return DeviceModelFromJson(json);
  } catch (const Error& e) {
    throw Error(std::string(e.what()) + " (in \"" + path + "\")");
  }
}

}  // namespace autograph
