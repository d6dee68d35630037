#include "core/schedule.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <climits>
#include <string>

namespace autograph {

int Schedule::num_ops() const {
  int n = 0;
  for (const Stage& stage : stages)
    for (const auto& group : stage.groups) n += static_cast<int>(group.size());
  return n;
}

int Schedule::num_groups() const {
  int n = 0;
  for (const Stage& stage : stages) n += static_cast<int>(stage.groups.size());
  return n;
}

int Schedule::max_groups() const {
  int widest = 0;
  for (const Stage& stage : stages) {
    widest = std::max(widest, static_cast<int>(stage.groups.size()));
    for (int stream : stage.streams) widest = std::max(widest, stream + 1);
  }
  return widest;
}

int KernelsLaunched(const OpGraph& graph, const Schedule& schedule) {
  int kernels = 0;
  for (const Stage& stage : schedule.stages) {
    if (stage.strategy == StageStrategy::Merge) {
      ++kernels;
      continue;
    }
    for (const auto& group : stage.groups)
      for (int op : group) kernels += graph.node(op).kind != OpKind::View;
  }
  return kernels;
}

Schedule JoinOneGroupStages(const Schedule& schedule) {
  Schedule joined;
  for (const Stage& stage : schedule.stages) {
    const bool one_group = stage.strategy == StageStrategy::Concurrent && stage.groups.size() == 1;
    if (one_group && !joined.stages.empty()) {
      Stage& last = joined.stages.back();
      if (last.strategy == StageStrategy::Concurrent && last.groups.size() == 1 && last.StreamOf(0) == stage.StreamOf(0)) {
        last.groups[0].insert(last.groups[0].end(), stage.groups[0].begin(), stage.groups[0].end());
        continue;
      }
    }
    joined.stages.push_back(stage);
  }
  return joined;
}

std::string TimingKey(const Schedule& schedule) {
  Schedule joined = JoinOneGroupStages(schedule);
  if (joined.stages.size() == 1 && joined.stages[0].strategy == StageStrategy::Concurrent &&
      joined.stages[0].groups.size() == 1) {
    std::vector<int> ops = joined.stages[0].groups[0];
    std::sort(ops.begin(), ops.end());
    return "one stream " + std::to_string(joined.stages[0].StreamOf(0)) + ": " + nlohmann::json(ops).dump();
  }
  return ScheduleToJson(joined).dump();
}

namespace {

const char* StrategyName(StageStrategy strategy) {
  switch (strategy) {
    case StageStrategy::Concurrent: return "concurrent";
    case StageStrategy::Merge: return "merge";
  }
  return "unknown";
}

[[noreturn]] void FailJson(const std::string& path, const std::string& what) {
  throw ScheduleError("schedule JSON: " + path + " " + what);
}

// Describes a JSON value for a message without dumping a whole (possibly huge) document.
std::string Describe(const nlohmann::json& value) {
  if (value.is_structured()) return std::string("an ") + value.type_name();
  return value.dump();
}

const nlohmann::json& Member(const nlohmann::json& object, const std::string& path, const char* key) {
  auto it = object.find(key);
  if (it == object.end()) FailJson(path, std::string("has no \"") + key + "\"");
  return *it;
}

// Rejects keys the format does not define, so that a misspelt key is not silently ignored.
void RequireOnlyKeys(const nlohmann::json& object, const std::string& path, std::initializer_list<const char*> keys) {
  for (auto it = object.begin(); it != object.end(); ++it) {
    if (std::none_of(keys.begin(), keys.end(), [&](const char* key) { return it.key() == key; }))
      FailJson(path, "has unknown key \"" + it.key() + "\"");
  }
}

int ParseOpId(const nlohmann::json& value, const std::string& path) {
  if (!value.is_number_integer()) FailJson(path, "is " + Describe(value) + "; op ids are integers");
  if (value.is_number_unsigned()) {
    if (value.get<uint64_t>() > static_cast<uint64_t>(INT_MAX)) FailJson(path, "is " + value.dump() + ", too large");
    return static_cast<int>(value.get<uint64_t>());
  }
  const int64_t id = value.get<int64_t>();
  if (id < 0) FailJson(path, "is " + std::to_string(id) + "; op ids are non-negative");
  if (id > INT_MAX) FailJson(path, "is " + std::to_string(id) + ", too large");
  return static_cast<int>(id);
}

Stage ParseStage(const nlohmann::json& json, const std::string& path) {
  if (!json.is_object()) FailJson(path, "is " + Describe(json) + "; a stage is an object");
  RequireOnlyKeys(json, path, {"strategy", "groups", "streams"});
  Stage stage;
  const auto& strategy = Member(json, path, "strategy");
  if (strategy == "concurrent") {
    stage.strategy = StageStrategy::Concurrent;
  } else if (strategy == "merge") {
    stage.strategy = StageStrategy::Merge;
  } else {
    FailJson(path + ".strategy", "is " + Describe(strategy) + "; expected \"concurrent\" or \"merge\"");
  }
  const auto& groups = Member(json, path, "groups");
  if (!groups.is_array()) FailJson(path + ".groups", "is " + Describe(groups) + "; expected an array of groups");
  for (size_t g = 0; g < groups.size(); ++g) {
    const std::string group_path = path + ".groups[" + std::to_string(g) + "]";
    if (!groups[g].is_array()) FailJson(group_path, "is " + Describe(groups[g]) + "; a group is an array of op ids");
    std::vector<int> group;
    for (size_t i = 0; i < groups[g].size(); ++i)
      group.push_back(ParseOpId(groups[g][i], group_path + "[" + std::to_string(i) + "]"));
    stage.groups.push_back(std::move(group));
  }
  if (json.contains("streams")) {  // optional; ValidateSchedule checks the values against the groups
    const auto& streams = json.at("streams");
    if (!streams.is_array()) FailJson(path + ".streams", "is " + Describe(streams) + "; expected an array of stream ids");
    for (size_t g = 0; g < streams.size(); ++g)
      stage.streams.push_back(ParseOpId(streams[g], path + ".streams[" + std::to_string(g) + "]"));
  }
  return stage;
}

}  // namespace

nlohmann::json ScheduleToJson(const Schedule& schedule) {
  nlohmann::json stages = nlohmann::json::array();
  for (const Stage& stage : schedule.stages) {
    nlohmann::json json = {{"strategy", StrategyName(stage.strategy)}, {"groups", stage.groups}};
    if (!stage.streams.empty()) json["streams"] = stage.streams;
    stages.push_back(std::move(json));
  }
  return {{"version", 1}, {"stages", std::move(stages)}};
}

Schedule ScheduleFromJson(const nlohmann::json& json) {
  if (!json.is_object()) FailJson("the document", "is " + Describe(json) + "; expected an object");
  RequireOnlyKeys(json, "the document", {"version", "stages"});
  const auto& version = Member(json, "the document", "version");
  if (!version.is_number_integer() || version != 1)
    FailJson("version", "is " + Describe(version) + "; this build reads version 1");
  const auto& stages = Member(json, "the document", "stages");
  if (!stages.is_array()) FailJson("stages", "is " + Describe(stages) + "; expected an array of stages");
  Schedule schedule;
  for (size_t s = 0; s < stages.size(); ++s)
    schedule.stages.push_back(ParseStage(stages[s], "stages[" + std::to_string(s) + "]"));
  return schedule;
}

}  // namespace autograph
