// CaptureInputs: which inputs a CUDA Graph reads in place and which it copies per replay.
#include "executor/capture_inputs.h"

#include <sstream>

#include "executor/float32_switches.h"

namespace autograph {

int64_t VersionOf(const at::Tensor& t) { return t.is_inference() ? 0 : static_cast<int64_t>(t._version()); }

std::optional<CaptureKey> CaptureInputs::KeyOf(const std::vector<c10::IValue>& inputs) const {
  CaptureKey key;
  key.numbers.reserve(inputs.size() * 16);  // a 4-D weight: 4 numbers, 4 sizes, 4 strides, address, version
  for (size_t i = 0; i < inputs.size(); ++i) {
    const c10::IValue& v = inputs[i];
    if (v.isTensor()) {
      const at::Tensor& t = v.toTensor();
      key.numbers.push_back(static_cast<int64_t>(t.scalar_type()));
      key.numbers.push_back(static_cast<int64_t>(t.device().type()));
      key.numbers.push_back(t.device().index());
      key.numbers.push_back(t.dim());
      key.numbers.insert(key.numbers.end(), t.sizes().begin(), t.sizes().end());
      if (bound(i)) {
        key.numbers.insert(key.numbers.end(), t.strides().begin(), t.strides().end());
        key.numbers.push_back(reinterpret_cast<intptr_t>(t.data_ptr()));
        key.numbers.push_back(VersionOf(t));
      }
    } else if (v.isNone() || v.isInt() || v.isDouble() || v.isBool() || v.isString() || v.isIntList() ||
               v.isDoubleList() || v.isBoolList()) {
      key.numbers.push_back(-1);  // where a value stands, so that it cannot pass for a tensor's numbers
      std::ostringstream value;  // only here: a replay of tensors alone builds no stream
      value << i << ':' << v.tagKind() << '=' << v << ';';
      key.values += value.str();
    } else {
      return std::nullopt;
    }
  }
  const std::vector<int64_t> switches = Float32SwitchesKey();  // what the captured kernels computed in
  key.numbers.insert(key.numbers.end(), switches.begin(), switches.end());
  return key;
}

std::vector<c10::IValue> CaptureInputs::Buffers(const std::vector<c10::IValue>& inputs) const {
  std::vector<c10::IValue> buffers;
  buffers.reserve(inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    const c10::IValue& v = inputs[i];
    buffers.push_back(v.isTensor() && !bound(i) ? c10::IValue(v.toTensor().clone()) : v);
  }
  return buffers;
}

size_t CaptureInputs::CopyInto(const std::vector<c10::IValue>& inputs, std::vector<c10::IValue>& buffers) const {
  size_t copies = 0;
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!inputs[i].isTensor() || bound(i)) continue;  // a bound tensor is the buffer (the key says so)
    const at::Tensor& from = inputs[i].toTensor();
    at::Tensor& to = buffers[i].toTensor();
    if (from.data_ptr() == to.data_ptr() && from.strides() == to.strides()) continue;  // the buffer itself
    to.copy_(from, /*non_blocking=*/true);
    ++copies;
  }
  return copies;
}

}  // namespace autograph
