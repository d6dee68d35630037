#pragma once
// OptimizeOptions from a flat JSON object with one key per option, as Python's
// autograph.optimize(..., **options) passes them: the bridge that keeps the Python names and the C++
// fields in one table.
#include <nlohmann/json_fwd.hpp>

#include <string>
#include <vector>

#include "autograph/optimize_options.h"

namespace autograph {

// Starts from the defaults and sets each key given. Throws InputError naming the key for an unknown
// key (with the known ones) or a value of the wrong type.
OptimizeOptions OptimizeOptionsFromJson(const nlohmann::json& options);

// The keys OptimizeOptionsFromJson knows, in the order of the table.
std::vector<std::string> OptimizeOptionKeys();

}  // namespace autograph
