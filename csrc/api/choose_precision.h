#pragma once
// Option precision on the TorchScript path. Every twin is judged the same way (JudgeTwin): its outputs
// on the example inputs against the float32 plan's in full float32, within option tolerance, then both
// timed side by side and kept only where faster (by 2 %: it gives up accuracy for the time).
// - tf32 on CUDA: the planned program once more with its float32 matmuls and convolutions in TF32
//   (ExecutorOptions::tf32). A CPU has no TF32.
// - bf16, fp16: a second plan of the graph with its matrix products and convolutions lowered
//   (ChooseLoweredOperators: all of them, or the runs of them that keep the outputs within the
//   tolerance), which the driver makes where OffersLoweredPlan: bf16 on CUDA and on a CPU with bf16
//   instructions, fp16 on CUDA. On CUDA, where it is not kept, the TF32 twin is tried.
#include <ATen/core/ivalue.h>

#include <string>
#include <vector>

#include "autograph/optimize.h"
#include "executor/program.h"
#include "graph_pass/choose_lowered_operators.h"

namespace autograph {

// Whether the driver plans the graph lowered to option precision (bf16, fp16) on option device; where
// not, `why` (when given) says why, for the report.
bool OffersLoweredPlan(const OptimizeOptions& options, std::string* why = nullptr);

// The lowered plan beside the float32 one: what was asked of the lowering and what it chose, its
// program, or why there is none.
struct LoweredPlan {
  LoweringRequest selection;
  c10::intrusive_ptr<Program> program;  // null where none was made
  std::string failure;                  // why planning failed, where it did
};

// The program to keep among `planned`, the `lowered` plan (may be null: none asked or offered) and, on
// CUDA, `planned`'s TF32 twin (all run on `inputs`, the forward's arguments on the device, and judged on
// `calibration` too: more calls' arguments on the device);
// report->precision says what was tried, measured and kept (left empty with precision fp32). Its `kept`
// names the precision of the program returned: the lowered plan's where that is kept.
c10::intrusive_ptr<Program> ChoosePrecision(c10::intrusive_ptr<Program> planned, const LoweredPlan* lowered,
                                            const std::vector<c10::IValue>& inputs, const OptimizeOptions& options,
                                            OptimizeReport* report,
                                            const std::vector<std::vector<c10::IValue>>& calibration = {});

// ChoosePrecision's judgement of `twin` (what `planned` computes, in `twin_precision`): its error by
// `accuracy` (core/output_error.h; by default relative to each output's scale) against `planned` run in full
// float32, over `inputs` and each of `calibration` (more calls' arguments, on the device), and, within
// `tolerance`, both timed side by side
// on `device` (on `inputs`); kept (the decision's `kept` is `twin_precision`) where faster by 2 % or more.
// Also on the CPU (where a TF32 twin computes as float32 does), which is how it is tested without a GPU.
PrecisionDecision JudgeTwin(const Program& planned, const Program& twin, const std::string& twin_precision,
                            const std::vector<c10::IValue>& inputs, double tolerance, c10::Device device,
                            const std::vector<std::vector<c10::IValue>>& calibration = {},
                            const std::string& accuracy = "max_error");

}  // namespace autograph
