#pragma once
// Rebuilding a value around new tensors, whatever structure holds them (tuples, named tuples, lists,
// dicts, nested). CloneTensors: what a CUDA Graph replay returns lives in the graph's static
// buffers, which the next replay overwrites; the caller gets this copy instead.
#include <ATen/core/ivalue.h>

#include <functional>

namespace autograph {

// `value` with every defined tensor t replaced by fn(t); tuples, lists and dicts are rebuilt around the
// results with the same types; anything else (numbers, strings, None, ...) is returned as it is.
c10::IValue MapTensors(const c10::IValue& value, const std::function<at::Tensor(const at::Tensor&)>& fn);

// MapTensors with a clone of each tensor.
c10::IValue CloneTensors(const c10::IValue& value);

}  // namespace autograph
