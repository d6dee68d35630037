#include <numeric>

#include "search/simple_schedulers.h"

namespace autograph {

Schedule SequentialSchedule(const OpGraph& graph) {
  Schedule schedule;
  if (graph.size() == 0) return schedule;  // an empty group would be invalid
  std::vector<int> order(graph.size());
  std::iota(order.begin(), order.end(), 0);  // ids are a topological order
  schedule.stages.push_back(Stage{StageStrategy::Concurrent, {std::move(order)}});
  return schedule;
}

}  // namespace autograph
