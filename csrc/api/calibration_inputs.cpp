#include "api/calibration_inputs.h"

#include <c10/util/irange.h>

#include <optional>
#include <sstream>

#include "autograph/error.h"

namespace autograph {

namespace {

std::string Described(const c10::IValue& v) {
  if (!v.isTensor()) return v.tagKind();
  const at::Tensor& t = v.toTensor();
  std::ostringstream out;
  out << c10::toString(t.scalar_type()) << " " << t.sizes();
  return out.str();
}

// Where `got` differs from `want` first, as the end of a sentence: ": " at the argument's top, else " at "
// its path inside the argument ("[2]": a tuple's third element, "['mask']": a dict's), then both
// described; nothing where they match.
std::optional<std::string> FirstDifference(const c10::IValue& got, const c10::IValue& want, const std::string& at) {
  auto differs = [&](const std::string& what, const std::string& theirs) {
    return (at.empty() ? ": " : " at " + at + ": ") + what + "; the example's is " + theirs;
  };
  if (got.tagKind() != want.tagKind()) return differs(Described(got), Described(want));
  if (want.isTensor()) {
    const at::Tensor &g = got.toTensor(), &w = want.toTensor();
    if (g.scalar_type() != w.scalar_type() || g.sizes() != w.sizes()) return differs(Described(got), Described(want));
    return std::nullopt;
  }
  auto elements = [&](const std::vector<c10::IValue>& gs,
                      const std::vector<c10::IValue>& ws) -> std::optional<std::string> {
    if (gs.size() != ws.size())
      return differs("a " + got.tagKind() + " of " + std::to_string(gs.size()),
                     "a " + want.tagKind() + " of " + std::to_string(ws.size()));
    for (size_t i : c10::irange(gs.size()))
      if (auto d = FirstDifference(gs[i], ws[i], at + "[" + std::to_string(i) + "]")) return d;
    return std::nullopt;
  };
  if (want.isTuple()) return elements(got.toTupleRef().elements().vec(), want.toTupleRef().elements().vec());
  if (want.isList()) return elements(got.toList().vec(), want.toList().vec());
  if (want.isGenericDict()) {
    const c10::Dict<c10::IValue, c10::IValue> g = got.toGenericDict(), w = want.toGenericDict();
    if (g.size() != w.size())
      return differs("a dict of " + std::to_string(g.size()), "a dict of " + std::to_string(w.size()));
    auto key_of = [](const c10::IValue& key) {
      return key.isString() ? "'" + key.toStringRef() + "'" : key.tagKind();
    };
    size_t i = 0;
    for (auto gi = g.begin(), wi = w.begin(); wi != w.end(); ++gi, ++wi, ++i) {
      if (gi->key() != wi->key())
        return differs("a dict whose key " + std::to_string(i) + " is " + key_of(gi->key()), key_of(wi->key()));
      if (auto d = FirstDifference(gi->value(), wi->value(), at + "[" + key_of(wi->key()) + "]")) return d;
    }
  }
  return std::nullopt;  // plain values: the same kind is enough (their values may differ)
}

}  // namespace

void CheckCalibrationInputs(const std::vector<std::vector<c10::IValue>>& calibration,
                            const std::vector<c10::IValue>& example, const std::string& caller) {
  for (size_t k : c10::irange(calibration.size())) {
    const std::string which = caller + ": calibration input " + std::to_string(k);
    if (calibration[k].size() != example.size())
      throw InputError(which + " has " + std::to_string(calibration[k].size()) +
                       " arguments; the example inputs have " + std::to_string(example.size()));
    for (size_t i : c10::irange(example.size()))
      if (auto d = FirstDifference(calibration[k][i], example[i], ""))
        throw InputError(which + ", argument " + std::to_string(i) + *d +
                         " (calibration inputs take the example's structure, dtypes and shapes)");
  }
}

}  // namespace autograph
