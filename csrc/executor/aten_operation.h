#pragma once
// One node of an AtenGraph as a boxed call through the c10 dispatcher (no TorchScript): the schema
// found by name, the node's arguments put in schema order (keywords by name, defaults from the
// schema, constants converted to what the schema's types expect), values read from the caller's
// stack.
#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/core/stack.h>

#include <functional>
#include <vector>

#include "core/aten_graph.h"

namespace autograph {

// The registered operator a node calls. Throws UnsupportedModelError naming it when it is not
// registered in this process (its library not loaded) or when the node's arguments do not fit
// its schema.
c10::OperatorHandle AtenOperatorOf(const AtenNode& node);

// What the step does: pops the values `reads` lists (in that order; a value read twice is listed
// twice) and pushes the node's outputs, one per schema return. Throws UnsupportedModelError as
// AtenOperatorOf, and when an argument cannot be passed.
using AtenStep = std::function<void(torch::jit::Stack&)>;
AtenStep AtenStepOf(const AtenGraph& graph, int node, std::vector<int>* reads);

// The values node `node` passes where its schema writes (`Tensor(a!)`, also inside a Tensor[] list);
// none for the executor's getitem. Throws UnsupportedModelError as AtenOperatorOf.
std::vector<int> ValuesWrittenBy(const AtenGraph& graph, int node);

// The node's in-place twin: the same call on "aten::<name>_" (same overload, same arguments), which
// writes its result into its first argument instead of new memory — what an exported program's
// functionalization undid (relu_ became relu). Null when there is none, when the result would not be
// that argument as it stands (sizes, strides or dtype differ; a view), or when the node reads that
// value twice. aten::clone's twin hands back its argument itself (a copy only where the memory format
// asked for differs). *self_read: the position in AtenStepOf's `reads` of the argument written. The
// caller runs it only where nothing else holds that tensor (CompiledGraph::RunStep).
AtenStep InPlaceTwinOf(const AtenGraph& graph, int node, int* self_read);

}  // namespace autograph
