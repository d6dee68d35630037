// Reachability, transitive reduction and minimum path cover of a DAG: the structural steps of Nimble.
#include "search/nimble_chains.h"

#include <algorithm>
#include <string>

#include "autograph/error.h"
#include "core/bipartite_matching.h"

namespace autograph {

namespace {

void CheckTopological(const std::vector<std::vector<int>>& succs, const char* where) {
  const int n = static_cast<int>(succs.size());
  for (int u = 0; u < n; ++u)
    for (int v : succs[u])
      if (v <= u || v >= n)
        throw Error(std::string(where) + ": edge " + std::to_string(u) + " -> " + std::to_string(v) +
                    " does not go to a later node (of " + std::to_string(n) + "); number the nodes topologically");
}

}  // namespace

DagReachability::DagReachability(const std::vector<std::vector<int>>& succs) {
  CheckTopological(succs, "DagReachability");
  const size_t n = succs.size(), words = (n + 63) / 64;
  rows_.assign(n, std::vector<uint64_t>(words, 0));
  for (size_t u = n; u-- > 0;) {  // successors first: they have larger indices
    for (int v : succs[u]) {
      rows_[u][v / 64] |= uint64_t{1} << (v % 64);
      for (size_t w = 0; w < words; ++w) rows_[u][w] |= rows_[v][w];
    }
  }
}

// An edge u -> v is implied by a longer path exactly when v is reachable from another successor w
// of u (the path's second node); reachability excludes the node itself, so w = v never counts.
std::vector<std::vector<int>> TransitiveReduction(const std::vector<std::vector<int>>& succs) {
  const DagReachability reach(succs);
  const size_t n = succs.size(), words = (n + 63) / 64;
  std::vector<std::vector<int>> reduced(n);
  std::vector<uint64_t> beyond(words);
  for (size_t u = 0; u < n; ++u) {
    std::fill(beyond.begin(), beyond.end(), 0);
    for (int w : succs[u])
      for (size_t k = 0; k < words; ++k) beyond[k] |= reach.Row(w)[k];
    for (int v : succs[u])
      if (!((beyond[v / 64] >> (v % 64)) & 1)) reduced[u].push_back(v);
    std::sort(reduced[u].begin(), reduced[u].end());
    reduced[u].erase(std::unique(reduced[u].begin(), reduced[u].end()), reduced[u].end());
  }
  return reduced;
}

std::vector<std::vector<int>> MinimumPathCover(const std::vector<std::vector<int>>& succs) {
  CheckTopological(succs, "MinimumPathCover");
  const int n = static_cast<int>(succs.size());
  const std::vector<int> next = MaximumBipartiteMatching(succs, n);
  std::vector<char> has_previous(n, 0);
  for (int u = 0; u < n; ++u)
    if (next[u] >= 0) has_previous[next[u]] = 1;
  std::vector<std::vector<int>> paths;
  for (int u = 0; u < n; ++u) {
    if (has_previous[u]) continue;
    std::vector<int> path;
    for (int v = u; v >= 0; v = next[v]) path.push_back(v);
    paths.push_back(std::move(path));
  }
  return paths;
}

}  // namespace autograph
