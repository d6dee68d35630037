// The measured cost model's disk cache; see cost_cache.h.
#include "measure/cost_cache.h"
#include "search/cost/device_id.h"

#include <unistd.h>

#include <cctype>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <random>

#include "autograph/error.h"

namespace autograph {

namespace {

constexpr int kVersion = 1;

}  // namespace

CostCache::CostCache(std::string path, std::string device_id)
    : path_(std::move(path)), device_id_(std::move(device_id)) {
  if (!path_.empty()) entries_ = ReadFile();
}

std::string CostCache::DefaultPath(const std::string& device_id) { return DeviceCachePath("costs", device_id); }

std::unordered_map<std::string, double> CostCache::ReadFile() const {
  std::unordered_map<std::string, double> entries;
  std::error_code ec;
  if (!std::filesystem::exists(path_, ec)) return entries;
  auto warn = [&](const std::string& what) {
    std::cerr << "autograph: warning: ignoring the measured-cost cache " << path_ << ": " << what
              << "; it will be rewritten\n";
    entries.clear();
    return entries;
  };
  std::ifstream in(path_);
  if (!in) return warn("cannot be read");
  nlohmann::json json = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (json.is_discarded()) return warn("not valid JSON");
  if (!json.is_object() || !json.contains("version") || json["version"] != kVersion)
    return warn("not a version " + std::to_string(kVersion) + " cache file");
  if (!json.contains("entries") || !json["entries"].is_object()) return warn("it has no \"entries\" object");
  for (auto it = json["entries"].begin(); it != json["entries"].end(); ++it) {
    if (!it.value().is_number() || !std::isfinite(it.value().get<double>()) || it.value().get<double>() < 0)
      return warn("entry \"" + it.key() + "\" is not a latency in ms");
    entries.emplace(it.key(), it.value().get<double>());
  }
  return entries;
}

std::optional<double> CostCache::Find(const std::string& key) const {
  auto it = entries_.find(key);
  if (it == entries_.end()) return std::nullopt;
  return it->second;
}

void CostCache::Insert(const std::string& key, double ms) {
  entries_[key] = ms;
  if (!path_.empty()) unsaved_[key] = ms;
}

void CostCache::Flush() {
  if (path_.empty() || unsaved_.empty()) return;
  // Merge with the file as it is now: another process may have added entries since we read it.
  std::unordered_map<std::string, double> merged = ReadFile();
  for (const auto& [key, ms] : unsaved_) merged[key] = ms;
  for (const auto& [key, ms] : merged) entries_.emplace(key, ms);

  nlohmann::json json = {{"version", kVersion}, {"device", device_id_}, {"entries", nlohmann::json::object()}};
  for (const auto& [key, ms] : merged) json["entries"][key] = ms;

  const std::filesystem::path path(path_);
  std::error_code ec;
  if (path.has_parent_path()) std::filesystem::create_directories(path.parent_path(), ec);
  if (ec) throw Error("cannot create the directory of the measured-cost cache " + path_ + ": " + ec.message());
  // A unique temporary name per writer, in the same directory so the rename is atomic.
  std::mt19937_64 rng(std::chrono::steady_clock::now().time_since_epoch().count() ^ static_cast<uint64_t>(getpid()));
  const std::string tmp = path_ + ".tmp." + std::to_string(getpid()) + "." + std::to_string(rng() % 1000000007);
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << json.dump(1) << '\n';
    out.close();
    if (!out) {
      std::filesystem::remove(tmp, ec);
      throw Error("cannot write the measured-cost cache " + tmp +
                  "; check permissions or pass another cache path (\"none\" for no disk cache)");
    }
  }
  std::filesystem::rename(tmp, path, ec);
  if (ec) {
    std::error_code ignored;
    std::filesystem::remove(tmp, ignored);
    throw Error("cannot replace the measured-cost cache " + path_ + ": " + ec.message());
  }
  unsaved_.clear();
}

}  // namespace autograph
