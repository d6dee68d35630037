#pragma once
// PlanSchedule: the schedule optimize() builds for a graph, by the method the options name, with the
// cost model it names; fills the planning part of the report.
#include <ATen/core/ivalue.h>

#include <string>
#include <vector>

#include "autograph/optimize.h"
#include "core/op_graph.h"
#include "core/schedule.h"

namespace autograph {

// `inputs`: the graph's example inputs on options.device (measured costs and on-board verification
// run the graph on them). Throws autograph::Error for an unknown method or cost, or bad knobs.
// The analytical device model optimize uses: options.device_model when set, else the one
// `autograph calibrate` fitted on this device (CalibratedDeviceModelPath) when there is one, else the
// preset (h100 on CUDA, cpu on CPU).
std::string DeviceModelName(const OptimizeOptions& options);

Schedule PlanSchedule(const OpGraph& graph, const std::vector<c10::IValue>& inputs, const OptimizeOptions& options,
                      OptimizeReport* report);

}  // namespace autograph
