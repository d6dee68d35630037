#pragma once
// Import's part of merging: what each operator of an imported graph brings to a merged kernel (its
// frozen weight, bias, convolution parameters and the value it reads), or why it cannot join one.
#include "core/op_graph.h"

namespace autograph {

// Op `id` of `graph` (imported: its anchor points into graph.graph()) as a merge candidate. A
// convolution (aten::conv2d, its padding="same"/"valid" overload, aten::_convolution_mode,
// aten::convolution, aten::_convolution) is one only when everything the merged kernel must know
// before the run is a constant of the lowered (frozen) graph: the weight and bias tensors, stride,
// padding, dilation, groups and transposed; a linear (aten::linear) when its weight and bias are
// frozen and nothing writes its output in place. Otherwise Kind::None with the reason.
MergeCandidate DescribeMergeCandidate(const OpGraph& graph, int id);

}  // namespace autograph
