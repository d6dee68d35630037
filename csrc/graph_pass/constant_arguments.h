#pragma once
// Arguments of a lowered (frozen) graph's nodes that are known before the run: prim::Constant
// values and lists built from constant ints. Shared by the passes that read convolutions and
// attention, and by the stitcher.
#include <ATen/core/ivalue.h>

#include <optional>
#include <vector>

namespace torch::jit {
struct Value;
}

namespace autograph {

// The value of a prim::Constant, or of a list built from constant ints; nullopt when computed.
std::optional<c10::IValue> ConstantOf(torch::jit::Value* v);

// A constant int list, or one constant int as a list of one; nullopt otherwise.
std::optional<std::vector<int64_t>> ConstantInts(torch::jit::Value* v);

// A constant int; nullopt otherwise.
std::optional<int64_t> ConstantInt(const torch::jit::Value* v);

// A number known when planning, as a double: a float, int or bool constant, or a constant 0-dim
// (non-complex) tensor.
std::optional<double> ConstantNumber(const torch::jit::Value* v);

}  // namespace autograph
