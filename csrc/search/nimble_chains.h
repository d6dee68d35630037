#pragma once
// The chain decomposition behind Nimble's stream assignment, on plain DAGs given as successor lists
// over a topological numbering (every successor has a larger index than its node): reachability,
// the transitive reduction, and a minimum vertex-disjoint path cover by bipartite matching. Internal
// to search/ (nimble_schedule.cpp and its tests).
#include <cstdint>
#include <vector>

namespace autograph {

// Which nodes each node reaches by a path of one or more edges, as bit rows (n^2 / 8 bytes).
class DagReachability {
 public:
  explicit DagReachability(const std::vector<std::vector<int>>& succs);
  bool Reaches(int from, int to) const { return (rows_[from][to / 64] >> (to % 64)) & 1; }
  const std::vector<uint64_t>& Row(int from) const { return rows_[from]; }

 private:
  std::vector<std::vector<uint64_t>> rows_;
};

// The same DAG without the edges u -> v that a longer path from u to v implies; successor lists
// ascending. It is the unique smallest graph with the same reachability.
std::vector<std::vector<int>> TransitiveReduction(const std::vector<std::vector<int>>& succs);

// Vertex-disjoint paths that follow edges of `succs`, cover every node, and are as few as possible:
// a maximum matching between "left" copies u and "right" copies v of the nodes, one pair per edge
// u -> v, links each matched u to its next node v, so there are n - |matching| paths (Hopcroft–Karp).
// Paths are listed by their first node, each in path order (ascending indices).
std::vector<std::vector<int>> MinimumPathCover(const std::vector<std::vector<int>>& succs);

}  // namespace autograph
