#pragma once
// Option precision on the TorchScript path: tf32 on CUDA offers the planned program once more with its
// float32 matmuls and convolutions in TF32 (ExecutorOptions::tf32), kept where its outputs on the example
// inputs stay within option tolerance of the program's in full float32 and it measures faster. Elsewhere
// (fp32; a CPU, which has no TF32) the program stays as planned. bf16 and fp16 are the export path's.
#include <ATen/core/ivalue.h>

#include <string>
#include <vector>

#include "autograph/optimize.h"
#include "executor/program.h"

namespace autograph {

// Throws InputError where option precision asks for what the TorchScript path does not compute in.
void CheckPrecisionOnTorchScript(const OptimizeOptions& options);

// The program to keep among `planned` and, where option precision offers it, its twin in TF32 (both run
// on `inputs`, the forward's arguments on the device); report->precision says what was tried, measured
// and kept (left empty with precision fp32).
c10::intrusive_ptr<Program> ChoosePrecision(c10::intrusive_ptr<Program> planned, const std::vector<c10::IValue>& inputs,
                                            const OptimizeOptions& options, OptimizeReport* report);

// ChoosePrecision's judgement of `twin` (`planned` computing in `twin_precision`): its error relative to
// each output's scale against `planned` run in full float32, and, within `tolerance`, both timed side by
// side on `device`; kept (the decision's `kept` is `twin_precision`) where faster. Also on the CPU (where
// a TF32 twin computes as float32 does), which is how it is tested without a GPU.
PrecisionDecision JudgeTwin(const Program& planned, const Program& twin, const std::string& twin_precision,
                            const std::vector<c10::IValue>& inputs, double tolerance, c10::Device device);

}  // namespace autograph
