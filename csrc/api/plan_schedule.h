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

// `values`: the recorded run of graph.graph() on the example inputs on options.device (measured costs
// time stages on its values; on-board verification runs the graph on its inputs). Throws
// autograph::Error for an unknown method or cost, or bad knobs.
Schedule PlanSchedule(const OpGraph& graph, const GraphValues& values, const OptimizeOptions& options,
                      OptimizeReport* report);

}  // namespace autograph
