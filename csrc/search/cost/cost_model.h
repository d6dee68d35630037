#pragma once
// Cost models: the latency of one operator and of a stage (its groups run concurrently on separate
// streams, or merged into one kernel). Searches rank schedules with them; implementations are
// measured (run the stage for real) or analytical (a device description and a roofline).
#include <string>
#include <vector>

#include "core/op_graph.h"
#include "core/schedule.h"

namespace autograph {

class CostModel {
 public:
  virtual ~CostModel() = default;
  virtual std::string name() const = 0;
  // Milliseconds for operator `op` of `graph` run alone (kernel time plus launch).
  virtual double OperatorMs(const OpGraph& graph, int op) = 0;
  // Milliseconds for a stage: its groups run concurrently (one stream each, operators of a group in
  // order), or as one merged kernel when stage.strategy is Merge.
  virtual double StageMs(const OpGraph& graph, const Stage& stage) = 0;
  // Sum of the stage latencies: the predicted latency of a whole schedule.
  double ScheduleMs(const OpGraph& graph, const Schedule& schedule) {
    double ms = 0;
    for (const Stage& stage : schedule.stages) ms += StageMs(graph, stage);
    return ms;
  }
};

}  // namespace autograph
