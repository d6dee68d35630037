// One table from option names to OptimizeOptions fields; see options_from_json.h.
#include "api/options_from_json.h"

#include <nlohmann/json.hpp>

#include <functional>
#include <type_traits>
#include <utility>

#include "autograph/error.h"

namespace autograph {
namespace {

using Setter = std::function<void(OptimizeOptions&, const nlohmann::json&)>;

// A setter that reads `value` as T (bool, integer, number or string) into the field `field` picks.
template <typename T, typename Field>
Setter Set(Field field) {
  return [field](OptimizeOptions& o, const nlohmann::json& value) {
    bool fits = false;
    if constexpr (std::is_same_v<T, bool>) {
      fits = value.is_boolean();
    } else if constexpr (std::is_integral_v<T>) {
      fits = value.is_number_integer();
    } else if constexpr (std::is_floating_point_v<T>) {
      fits = value.is_number();
    } else {
      fits = value.is_string();
    }
    if (!fits) throw InputError("has the wrong type: " + value.dump());
    field(o) = value.get<T>();
  };
}

const std::vector<std::pair<std::string, Setter>>& Table() {
  static const std::vector<std::pair<std::string, Setter>> table = {
      {"method", Set<std::string>([](OptimizeOptions& o) -> std::string& { return o.search.method; })},
      {"device", [](OptimizeOptions& o, const nlohmann::json& v) {
         if (!v.is_string()) throw InputError("has the wrong type: " + v.dump() + " (a device string, e.g. \"cuda:0\")");
         try {
           o.executor.device = c10::Device(v.get<std::string>());
         } catch (const c10::Error&) {
           throw InputError("is not a device: " + v.dump() + " (cpu, cuda, cuda:N)");
         }
       }},
      {"max_streams", Set<int>([](OptimizeOptions& o) -> int& { return o.search.max_streams; })},
      {"cuda_graph", Set<bool>([](OptimizeOptions& o) -> bool& { return o.executor.cuda_graph; })},
      {"substitutions", [](OptimizeOptions& o, const nlohmann::json& v) {  // all six rewrites of the graph on or off
         if (!v.is_boolean()) throw InputError("has the wrong type: " + v.dump());
         const bool on = v.get<bool>();
         auto& s = o.substitutions;
         s.fuse_attention = s.merge_linears = s.regroup_convolutions = s.fold_conv_relu = s.prepack_onednn =
             s.channels_last_pools = on;
       }},
      {"fuse_attention", Set<bool>([](OptimizeOptions& o) -> bool& { return o.substitutions.fuse_attention; })},
      {"merge_linears", Set<bool>([](OptimizeOptions& o) -> bool& { return o.substitutions.merge_linears; })},
      {"regroup_convolutions", Set<bool>([](OptimizeOptions& o) -> bool& { return o.substitutions.regroup_convolutions; })},
      {"fold_conv_relu", Set<bool>([](OptimizeOptions& o) -> bool& { return o.substitutions.fold_conv_relu; })},
      {"prepack_onednn", Set<bool>([](OptimizeOptions& o) -> bool& { return o.substitutions.prepack_onednn; })},
      {"channels_last_pools", Set<bool>([](OptimizeOptions& o) -> bool& { return o.substitutions.channels_last_pools; })},
      {"stitch", Set<bool>([](OptimizeOptions& o) -> bool& { return o.substitutions.stitch; })},
      {"inductor", Set<bool>([](OptimizeOptions& o) -> bool& { return o.substitutions.inductor; })},
      {"check_rewrites", Set<bool>([](OptimizeOptions& o) -> bool& { return o.substitutions.check_rewrites; })},
      {"merge", Set<bool>([](OptimizeOptions& o) -> bool& { return o.search.merge; })},
      {"alpha", Set<double>([](OptimizeOptions& o) -> double& { return o.search.alpha; })},
      {"block_ops", Set<int>([](OptimizeOptions& o) -> int& { return o.search.block_ops; })},
      {"block_states", Set<int64_t>([](OptimizeOptions& o) -> int64_t& { return o.search.block_states; })},
      {"r", Set<int>([](OptimizeOptions& o) -> int& { return o.search.autograph_r; })},
      {"budget", Set<int64_t>([](OptimizeOptions& o) -> int64_t& { return o.search.budget; })},
      {"time_limit", Set<double>([](OptimizeOptions& o) -> double& { return o.search.time_limit; })},
      {"verify", Set<int>([](OptimizeOptions& o) -> int& { return o.search.verify; })},
      {"ios_r", Set<int>([](OptimizeOptions& o) -> int& { return o.search.ios_r; })},
      {"ios_s", Set<int>([](OptimizeOptions& o) -> int& { return o.search.ios_s; })},
      {"ios_block", Set<int>([](OptimizeOptions& o) -> int& { return o.search.ios_block; })},
      {"cost", Set<std::string>([](OptimizeOptions& o) -> std::string& { return o.cost.model; })},
      {"device_model", Set<std::string>([](OptimizeOptions& o) -> std::string& { return o.cost.device_model; })},
      {"cost_cache", Set<std::string>([](OptimizeOptions& o) -> std::string& { return o.cost.cache; })},
  };
  return table;
}

}  // namespace

std::vector<std::string> OptimizeOptionKeys() {
  std::vector<std::string> keys;
  for (const auto& [key, setter] : Table()) keys.push_back(key);
  return keys;
}

OptimizeOptions OptimizeOptionsFromJson(const nlohmann::json& options) {
  if (!options.is_object()) throw InputError("options must be a JSON object of name: value, got " + options.dump());
  OptimizeOptions result;
  for (const auto& [key, value] : options.items()) {
    const Setter* setter = nullptr;
    for (const auto& [name, s] : Table())
      if (name == key) setter = &s;
    if (!setter) {
      std::string known;
      for (const std::string& k : OptimizeOptionKeys()) known += (known.empty() ? "" : ", ") + k;
      throw InputError("unknown option '" + key + "'; the options are: " + known);
    }
    try {
      (*setter)(result, value);
    } catch (const InputError& e) {
      throw InputError("option '" + key + "' " + e.what());
    }
  }
  return result;
}

}  // namespace autograph
