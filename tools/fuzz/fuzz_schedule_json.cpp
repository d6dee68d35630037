// libFuzzer target: schedule JSON. Anything is read or rejected with ScheduleError; what is read
// writes back to the same JSON, and validates against a small operator graph or is rejected with
// a ScheduleError (never a crash).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string>

#include "core/schedule.h"
#include "executor/validate_schedule.h"

namespace {

// 0 -> 1 -> 3, 0 -> 2 -> 3, 4 alone; op 5 a view.
const autograph::OpGraph& Graph() {
  static const autograph::OpGraph graph = [] {
    autograph::OpGraph g;
    for (int i = 0; i < 6; ++i) {
      autograph::OpNode node;
      node.op = "fuzz::op" + std::to_string(i);
      node.kind = i == 5 ? autograph::OpKind::View : autograph::OpKind::MemoryBound;
      g.AddNode(node);
    }
    g.AddEdge(0, 1), g.AddEdge(0, 2), g.AddEdge(1, 3), g.AddEdge(2, 3);
    return g;
  }();
  return graph;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const nlohmann::json json = nlohmann::json::parse(data, data + size, nullptr, /*allow_exceptions=*/false);
  if (json.is_discarded()) return 0;
  autograph::Schedule schedule;
  try {
    schedule = autograph::ScheduleFromJson(json);
  } catch (const autograph::ScheduleError&) {
    return 0;
  }
  if (autograph::ScheduleToJson(autograph::ScheduleFromJson(autograph::ScheduleToJson(schedule))) !=
      autograph::ScheduleToJson(schedule))
    std::abort();  // round trip broke
  try {
    autograph::ValidateSchedule(schedule, Graph());
  } catch (const autograph::ScheduleError&) {
  }
  return 0;
}
