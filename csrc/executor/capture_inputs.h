#pragma once
// How a captured CUDA Graph's inputs are bound. A graph reads and writes fixed addresses, so every
// replay must find its inputs' data where the capture saw them. Inputs are of two kinds:
//  - bound (an exported program's weights and its compiled parts' packages, which arrive with every
//    call but are the same tensors each time): the graph reads the caller's own tensor, which the
//    capture holds. Their memory, layout and version are part of the capture's key, so other weights,
//    or the same ones written in place (what was derived from them at capture — merged weights, a
//    loaded package — would be stale), get a capture of their own. Never cloned, never copied.
//  - the user's inputs: cloned into buffers of the graph's own at capture, since the caller's next
//    tensor lives elsewhere; a replay copies each into its buffer unless it already is that buffer.
//    Their contents are copied even when the same tensor comes again: memory can be written without
//    a version bump (by another library's kernel, through .data), and a stale input is a wrong output.
// Apart from the CUDA backend so that what a replay copies is tested on the CPU.
#include <ATen/core/ivalue.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace autograph {

// What a capture depends on: each tensor's dtype, device and sizes (and for a bound tensor its
// address, strides and version), the value of every other input (numbers, bools, strings, None,
// lists of those), which the captured kernels baked in, and the process's float32 precision switches
// (Float32SwitchesKey), under which their kernels were chosen. Numbers in one vector: built per call, it
// must cost little for the hundreds of weights an exported program passes.
struct CaptureKey {
  std::vector<int64_t> numbers;
  std::string values;  // the non-tensor inputs, printed
  bool operator<(const CaptureKey& other) const {
    return numbers != other.numbers ? numbers < other.numbers : values < other.values;
  }
  bool operator==(const CaptureKey& other) const { return numbers == other.numbers && values == other.values; }
  bool operator!=(const CaptureKey& other) const { return !(*this == other); }
};

// The version of `t` as in-place writes bump it (inference tensors have none: 0).
int64_t VersionOf(const at::Tensor& t);

class CaptureInputs {
 public:
  // `bound`: per input, whether it is bound (shorter than the inputs: the rest are the user's).
  explicit CaptureInputs(std::vector<bool> bound = {}) : bound_(std::move(bound)) {}

  bool bound(size_t i) const { return i < bound_.size() && bound_[i]; }
  // nullopt for inputs a capture cannot stand for (tensor lists, objects, ...).
  std::optional<CaptureKey> KeyOf(const std::vector<c10::IValue>& inputs) const;
  // The tensors a capture of `inputs` reads: bound tensors themselves, clones of the user's.
  std::vector<c10::IValue> Buffers(const std::vector<c10::IValue>& inputs) const;
  // Before a replay: copies into `buffers` (from Buffers) each input the graph does not already read
  // there. Returns how many tensors it copied. On CUDA the copies are asynchronous on the current stream.
  size_t CopyInto(const std::vector<c10::IValue>& inputs, std::vector<c10::IValue>& buffers) const;

 private:
  std::vector<bool> bound_;
};

}  // namespace autograph
