#pragma once
// ImportAtenGraph: an exported program's ATen graph -> OpGraph, from the metadata torch.export
// recorded (shapes, strides, dtypes): no TorchScript and no run of the model.
#include <memory>

#include "core/aten_graph.h"
#include "core/op_graph.h"

namespace autograph {

// Each node that launches work anchors an operator. A view (a schema whose returns alias an input
// without writing it, or the executor's getitem) joins the operator that produces all its inputs,
// else the one operator that reads it, else stands alone as a View operator. Kinds come from the
// schema (compute-bound by name), FLOPs from the shapes, bytes from the tensors read and written
// (weight_bytes: those read from the program's parameters, buffers and constants). Edges follow
// data dependences; an operator whose schema writes an input is ordered after and before every other
// one. Throws UnsupportedModelError for an operator that is not registered or whose arguments do
// not fit its schema.
OpGraph ImportAtenGraph(std::shared_ptr<const AtenGraph> graph);

}  // namespace autograph
