#pragma once
// How far a program's outputs are from a reference's: the measure option accuracy names and option
// tolerance bounds (option precision). Each measure is a loss, 0 where the outputs agree:
//   max_error: the largest |got - want| over max |want|, per output (RelativeError);
//   top1:      the share of rows (every index but the last dimension's) whose largest entry sits
//              elsewhere than the reference's: a classifier's top-1 answers that changed;
//   cosine:    1 - the cosine similarity of each output with the reference's, flattened;
//   sqnr:      the noise-to-signal power ratio, sum (got - want)^2 over sum want^2 (10^(-SQNR/10)).
// Over several calls (the example's and the calibration inputs), top1 counts rows over all of them;
// the others take the worst call.
#include <ATen/core/Tensor.h>

#include <string>
#include <vector>

namespace autograph {

// The measures' names, as option accuracy takes them ("max_error" first: the default).
const std::vector<std::string>& AccuracyMeasures();

// The largest |got - want| over max |want|, the worst over the outputs: NaN where either holds a NaN or
// an infinity; infinite where an output differs in shape or dtype, or an integer one in any value.
double RelativeError(const std::vector<at::Tensor>& got, const std::vector<at::Tensor>& want);

// A measure over calls: the loss option tolerance bounds, and each call's own.
struct MeasuredOutputs {
  double loss = 0;
  std::vector<double> per_call;
};

// `measure` (one of AccuracyMeasures) of `got[k]` against `want[k]` (the outputs of call k each). NaN
// where a floating output holds a NaN or an infinity (cosine, sqnr, max_error; top1 counts such a row as
// changed); infinite where an output differs in shape or dtype, or an integer one in any value. An
// unknown measure is an InputError.
MeasuredOutputs MeasureOutputs(const std::string& measure, const std::vector<std::vector<at::Tensor>>& got,
                               const std::vector<std::vector<at::Tensor>>& want);

}  // namespace autograph
