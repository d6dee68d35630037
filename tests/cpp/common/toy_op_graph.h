#pragma once
// Toy operator graphs for the tests of the partitions and searches: operators that only carry the
// numbers the code under test reads.
#include <cstdint>
#include <string>

#include "core/op_graph.h"

namespace autograph::testing {

// An operator with these FLOPs and bytes written; returns its id. Operator i is named "test::op<i>",
// so that a message can be checked for naming the right one.
inline int AddOp(OpGraph& g, double flops, int64_t bytes_written, OpKind kind = OpKind::ComputeBound) {
  OpNode node;
  node.op = "test::op" + std::to_string(g.size());
  node.kind = kind;
  node.flops = flops;
  node.bytes_written = bytes_written;
  return g.AddNode(node);
}

}  // namespace autograph::testing
