#pragma once
// Where the test zoo lives: $AUTOGRAPH_ZOO_DIR, else <source>/models/zoo (scripts/test.sh exports it).
#include <cstdlib>
#include <string>

namespace autograph::testing {

inline std::string ZooDir() {
  if (const char* dir = std::getenv("AUTOGRAPH_ZOO_DIR")) return dir;
  if (const char* src = std::getenv("AUTOGRAPH_SOURCE_DIR")) return std::string(src) + "/models/zoo";
  return "models/zoo";
}

inline std::string ZooModel(const std::string& name) { return ZooDir() + "/" + name + ".pt"; }

}  // namespace autograph::testing
