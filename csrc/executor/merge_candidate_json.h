#pragma once
// A merge candidate in a saved plan (Program, AtenProgram): everything but its tensors, which the
// loader restores from where they live — a TorchScript anchor's constants, or an exported program's
// inputs (weight_input, bias_input) when it runs.
#include <nlohmann/json.hpp>

#include "core/op_graph.h"

namespace autograph {

nlohmann::json MergeCandidateToJson(const MergeCandidate& candidate);

// The candidate without tensors (weight and bias undefined). Throws Error ("corrupted program: ...")
// for an unknown kind or a malformed entry.
MergeCandidate MergeCandidateFromJson(const nlohmann::json& json);

}  // namespace autograph
