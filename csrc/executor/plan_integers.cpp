#include "executor/plan_integers.h"

#include <limits>

#include "autograph/error.h"

namespace autograph {

int64_t PlanInt(const nlohmann::json& v) {
  if (!v.is_number_integer()) throw Error("corrupted program: " + v.dump() + " where the plan has an integer");
  return v.get<int64_t>();
}

int PlanIndex(const nlohmann::json& v) {
  const int64_t i = PlanInt(v);
  if (i < 0 || i > std::numeric_limits<int>::max()) throw Error("corrupted program: index " + v.dump() + " out of range");
  return static_cast<int>(i);
}

std::vector<int64_t> PlanInts(const nlohmann::json& v) {
  if (!v.is_array()) throw Error("corrupted program: " + v.dump() + " where the plan has a list of integers");
  std::vector<int64_t> out;
  for (const nlohmann::json& e : v) out.push_back(PlanInt(e));
  return out;
}

}  // namespace autograph
