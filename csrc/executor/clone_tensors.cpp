#include "executor/clone_tensors.h"

#include <ATen/ATen.h>

#include <utility>
#include <vector>

namespace autograph {

c10::IValue MapTensors(const c10::IValue& value, const std::function<at::Tensor(const at::Tensor&)>& fn) {
  if (value.isTensor()) return value.toTensor().defined() ? c10::IValue(fn(value.toTensor())) : value;
  if (value.isTuple()) {
    const auto& tuple = value.toTupleRef();
    std::vector<c10::IValue> elements;
    elements.reserve(tuple.elements().size());
    for (const auto& e : tuple.elements()) elements.push_back(MapTensors(e, fn));
    const c10::TupleTypePtr type = value.toTuple()->type();
    if (type->schema() || type->name()) return c10::ivalue::Tuple::createNamed(std::move(elements), type);
    return c10::ivalue::Tuple::create(std::move(elements));
  }
  if (value.isTensorList()) {
    c10::List<at::Tensor> list;
    list.reserve(value.toTensorList().size());
    for (const at::Tensor& t : value.toTensorList()) list.push_back(t.defined() ? fn(t) : t);
    return list;
  }
  if (value.isList()) {
    const c10::List<c10::IValue> in = value.toList();
    c10::impl::GenericList out(in.elementType());
    out.reserve(in.size());
    for (const c10::IValue& e : in) out.push_back(MapTensors(e, fn));
    return out;
  }
  if (value.isGenericDict()) {
    const c10::Dict<c10::IValue, c10::IValue> in = value.toGenericDict();
    c10::impl::GenericDict out(in.keyType(), in.valueType());
    out.reserve(in.size());
    for (const auto& entry : in) out.insert(entry.key(), MapTensors(entry.value(), fn));
    return out;
  }
  return value;
}

c10::IValue CloneTensors(const c10::IValue& value) {
  return MapTensors(value, [](const at::Tensor& t) { return t.clone(); });
}

}  // namespace autograph
