#pragma once
// Floating-point operation counts from an operator's name and its real inputs/outputs.
#include <ATen/core/ivalue.h>

#include <string>
#include <vector>

namespace autograph {

// Multiply-adds count as 2 FLOPs. Convolutions and GEMMs (conv*, _convolution, linear, matmul, mm,
// bmm, addmm, baddbmm) are exact; memory-bound operators count one FLOP per element they produce,
// or per element they reduce (softmax, normalization and reductions a small constant per element).
double EstimateFlops(const std::string& op, const std::vector<c10::IValue>& inputs,
                     const std::vector<c10::IValue>& outputs);

// A convolution operator, input 0 the input and input 1 the weight: conv*, _convolution*,
// convolution, and cuDNN's fused cudnn_convolution_relu / cudnn_convolution_add_relu.
bool IsConvolutionOp(const std::string& op);

// A compute-bound operator (convolutions, GEMMs, attention, recurrent layers): the analytical cost
// model charges it by FLOPs; every other operator that launches work is memory-bound.
bool IsComputeBoundOp(const std::string& op);

// Every defined tensor inside an IValue (tensors, tensor lists, tuples, generic lists, dict values),
// depth first, in order.
void CollectTensors(const c10::IValue& value, std::vector<at::Tensor>* out);

}  // namespace autograph
