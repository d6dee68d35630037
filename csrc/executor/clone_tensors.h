#pragma once
// CloneTensors: a copy of a value whose tensors have memory of their own, whatever structure holds
// them (tuples, named tuples, lists, dicts, nested). What a CUDA Graph replay returns lives in the
// graph's static buffers, which the next replay overwrites; the caller gets this copy instead.
#include <ATen/core/ivalue.h>

namespace autograph {

// Tensors are cloned; tuples, lists and dicts are rebuilt around the clones with the same types;
// anything else (numbers, strings, None, ...) is returned as it is.
c10::IValue CloneTensors(const c10::IValue& value);

}  // namespace autograph
