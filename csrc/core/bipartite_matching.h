#pragma once
// Maximum-cardinality bipartite matching (Hopcroft–Karp, O(E·sqrt(V))). Used for the width of a
// DAG (Dilworth) and for Nimble's minimum path cover.
#include <vector>

namespace autograph {

// adjacency[u] lists the right vertices (0..num_right-1) left vertex u may be matched to.
// Returns match_of_left: the right vertex matched to each left vertex, or -1.
std::vector<int> MaximumBipartiteMatching(const std::vector<std::vector<int>>& adjacency, int num_right);

}  // namespace autograph
