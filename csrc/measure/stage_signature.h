#pragma once
// Stage signature: a canonical text of what running a stage costs depends on, so that identical
// stages — in one model, in another model, in another run — share one measurement. It names the
// strategy and, per group per operator, the anchor's schema, its input and output shapes, dtypes and
// layouts, the values of its non-tensor inputs (stride, padding, ...), where each input comes from
// (inside the stage or outside), the kinds of the folded view/metadata nodes, plus the device id and
// torch version (the caller's device_key says which device and settings). Value names and node ids
// are left out: they differ between models.
#include <string>

#include "core/op_graph.h"
#include "core/schedule.h"
#include "measure/record_values.h"

namespace autograph {

// The signature of `stage` of `graph`, its shapes and scalars read from `values`. Throws Error when
// a value the stage reads was not recorded (the stage is not from the recorded graph).
std::string StageSignature(const OpGraph& graph, const Stage& stage, const ValueRecord& values,
                           const std::string& device_key);

// The same for an OpGraph over an AtenGraph (an exported program), values by id: the anchor's
// schema name and overload, its arguments (constants by value, tensors by recorded shape) and outputs,
// the folded nodes' operators. Equal stages of either kind of graph need not share a signature.
std::string StageSignature(const OpGraph& graph, const Stage& stage, const AtenValueRecord& values,
                           const std::string& device_key);

// Stable short key of a signature for the disk cache (SHA-1, hex).
std::string SignatureHash(const std::string& signature);

}  // namespace autograph
