#pragma once
// OptimizeExported: the export path's driver. An exported program's ATen graph (AtenGraph, written by
// python/autograph/export.py) and its tensors in, the AtenProgram text that autograph::execute runs
// and the report out. No TorchScript anywhere: the import reads the export's metadata, the search
// and on-board verification run as for a TorchScript model, the program calls the dispatcher.
#include <ATen/core/Tensor.h>

#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

#include "autograph/optimize_options.h"
#include "autograph/optimize_report.h"

namespace autograph {

// `tensors`: one per graph input, in order (the program's weights, then the example inputs); moved
// to options.executor.device. The TorchScript rewrites (substitutions, stitching) do not apply to
// exported programs yet and are not run; options.example_inputs is ignored. Throws InputError when
// the tensors do not fit the graph, UnsupportedModelError for what the export path cannot take,
// Error for a malformed graph or bad options.
std::string OptimizeExported(const nlohmann::json& graph, const std::vector<at::Tensor>& tensors,
                             const OptimizeOptions& options, OptimizeReport* report);

}  // namespace autograph
