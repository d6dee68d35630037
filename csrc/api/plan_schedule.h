#pragma once
// PlanSchedule: the schedule optimize() builds for a graph, by the method the options name, with the
// cost model it names; fills the planning part of the report.
#include <ATen/core/ivalue.h>

#include <string>
#include <vector>

#include "autograph/optimize.h"
#include "core/op_graph.h"
#include "core/schedule.h"
#include "graph_pass/graph_values.h"

namespace autograph {

// The analytical device model optimize uses: options.device_model when set, else the one
// `autograph calibrate` fitted on this device (CalibratedDeviceModelPath) when there is one, else the
// preset (h100 on CUDA, cpu on CPU).
std::string DeviceModelName(const OptimizeOptions& options);

// The cost model the search ranks with: options.cost.model when set, else measured on CUDA (every
// stage run on the device), analytical on CPU (measuring every stage there takes minutes).
std::string CostModelName(const OptimizeOptions& options);

// `inputs`: the graph's inputs on options.device, which on-board verification runs it on. `values`:
// the recorded run of graph.graph() on them (measured costs time stages on its values); null for a
// graph over an exported program, whose values the measured cost model records itself. Throws autograph::Error for an
// unknown method or cost, or bad knobs.
Schedule PlanSchedule(const OpGraph& graph, const std::vector<c10::IValue>& inputs, const GraphValues* values,
                      const OptimizeOptions& options, OptimizeReport* report);

// The report's fields that describe the kept schedule, for both paths: device, kernels launched,
// memory-bound kernels after, linears merged by Merge stages, stages, groups, streams, search time,
// the schedule and its timeline (drawn with the analytical model whatever the method planned with:
// it needs no device time; a device model that does not load costs the picture, with one warning).
void ReportSchedule(const OpGraph& graph, const Schedule& schedule, const OptimizeOptions& options,
                    double search_seconds, OptimizeReport* report);

}  // namespace autograph
