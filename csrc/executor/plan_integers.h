#pragma once
// Integers of a saved plan (Program, AtenProgram), checked: nlohmann's get<int> converts a float too,
// and one out of range is undefined behaviour (found by fuzz_program_state). Each throws Error
// ("corrupted program: ...").
#include <cstdint>
#include <nlohmann/json.hpp>
#include <vector>

namespace autograph {

int64_t PlanInt(const nlohmann::json& v);
int PlanIndex(const nlohmann::json& v);  // 0 .. INT_MAX
std::vector<int64_t> PlanInts(const nlohmann::json& v);

}  // namespace autograph
