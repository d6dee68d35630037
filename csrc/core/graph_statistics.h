#pragma once
// Structural statistics of an OpGraph: size, width (maximum antichain), critical paths.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/op_graph.h"

namespace autograph {

struct GraphStatistics {
  int operators = 0;
  int edges = 0;
  int width = 0;                   // maximum antichain, exact (Dilworth)
  int critical_path_ops = 0;       // longest chain counting kernel-launching operators (views count 0)
  double critical_path_flops = 0;  // longest chain weighted by FLOPs
  double flops = 0;
  int64_t weight_bytes = 0;
  std::map<std::string, int> ops_by_kind;  // "compute", "memory", "view", "control_flow"
  std::map<std::string, int> ops_by_type;  // "aten::conv2d" -> count
};

// Width of a DAG given as successor lists over a topological numbering (succs[u] > u): the size of
// the largest set of nodes no two of which are joined by a path; n minus a maximum matching in the
// bipartite graph of the transitive closure.
int DagWidth(const std::vector<std::vector<int>>& succs);

GraphStatistics ComputeStatistics(const OpGraph& graph);

}  // namespace autograph
