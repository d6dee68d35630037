#pragma once
// Calibration inputs (OptimizeOptions::calibration_inputs) checked against the example inputs before
// any work: the plan and its lowered candidates are made for the example's structure, dtypes and shapes.
#include <ATen/core/ivalue.h>

#include <string>
#include <vector>

namespace autograph {

// Throws InputError naming the first calibration input (and its argument) that is not structured like
// `example` (the same arguments, tuples, lists and dict keys, the same kinds of plain values) or holds a
// tensor whose dtype or shape differs from the example's. `caller` names the entry point ("optimize").
void CheckCalibrationInputs(const std::vector<std::vector<c10::IValue>>& calibration,
                            const std::vector<c10::IValue>& example, const std::string& caller);

}  // namespace autograph
