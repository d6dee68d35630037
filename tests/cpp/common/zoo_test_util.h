#pragma once
// Where the test zoo lives: $AUTOGRAPH_ZOO_DIR, else <source>/models/zoo (scripts/test.sh exports it).
#include <ATen/core/ivalue.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "core/operator_flops.h"

namespace autograph::testing {

inline std::string ZooDir() {
  if (const char* dir = std::getenv("AUTOGRAPH_ZOO_DIR")) return dir;
  if (const char* src = std::getenv("AUTOGRAPH_SOURCE_DIR")) return std::string(src) + "/models/zoo";
  return "models/zoo";
}

inline std::string ZooModel(const std::string& name) { return ZooDir() + "/" + name + ".pt"; }

// Every tensor of a forward's outputs, in order (tuples and lists flattened).
inline std::vector<at::Tensor> Flatten(const std::vector<c10::IValue>& values) {
  std::vector<at::Tensor> out;
  for (const auto& v : values) autograph::CollectTensors(v, &out);
  return out;
}

}  // namespace autograph::testing
