#pragma once
// The measured cost model's disk cache: stage latencies by signature hash, in a versioned JSON file
//   {"version": 1, "device": "<device id>", "entries": {"<sha1 of the stage signature>": ms, ...}}
// Every key carries the device id and torch version (they are part of the signature), so a file can
// safely hold entries of several devices; the default path is one file per device anyway. A file
// that cannot be parsed gives one warning line on stderr and is treated as empty (and rewritten on
// the next flush), never a crash. Writers merge with what is on disk, write a temporary file in
// the same directory and rename it over the old one, so concurrent writers never leave a torn file
// (the last one wins for a key both measured).
#include <optional>
#include <string>
#include <unordered_map>

namespace autograph {

class CostCache {
 public:
  // An empty path: memory only, Flush does nothing. Reads the file when it exists.
  CostCache(std::string path, std::string device_id);

  std::optional<double> Find(const std::string& key) const;
  void Insert(const std::string& key, double ms);
  // Writes entries inserted since the last flush. Throws Error naming the path on I/O failure.
  void Flush();

  const std::string& path() const { return path_; }
  size_t size() const { return entries_.size(); }

  // ~/.cache/autograph/costs/<device id, made file-name safe>.json ($XDG_CACHE_HOME replaces
  // ~/.cache); "" when neither HOME nor XDG_CACHE_HOME is set.
  static std::string DefaultPath(const std::string& device_id);

 private:
  // Entries of the file at path_, or none (with a warning) when it is unreadable or malformed.
  std::unordered_map<std::string, double> ReadFile() const;

  std::string path_, device_id_;
  std::unordered_map<std::string, double> entries_;
  std::unordered_map<std::string, double> unsaved_;
};

}  // namespace autograph
