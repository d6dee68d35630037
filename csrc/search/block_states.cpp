#include "search/block_states.h"

#include <algorithm>
#include <string>
#include <unordered_set>

#include "autograph/error.h"

namespace autograph {

bool BlockStatesAtMost(const OpGraph& graph, const std::vector<int>& ops, int64_t bound) {
  const int m = static_cast<int>(ops.size());
  if (m > 64) throw Error("BlockStatesAtMost: a block of " + std::to_string(m) + " ops; at most 64 are counted");
  std::vector<uint64_t> succs(m, 0);  // within `ops`
  for (int i = 0; i < m; ++i)
    for (int v : graph.succs(ops[i]))
      if (auto it = std::lower_bound(ops.begin(), ops.end(), v); it != ops.end() && *it == v)
        succs[i] |= uint64_t{1} << (it - ops.begin());
  const uint64_t all = m == 64 ? ~uint64_t{0} : (uint64_t{1} << m) - 1;
  std::unordered_set<uint64_t> seen{all};
  std::vector<uint64_t> frontier{all};
  while (!frontier.empty()) {
    const uint64_t state = frontier.back();
    frontier.pop_back();
    for (int i = 0; i < m; ++i) {
      if (!(state >> i & 1) || (succs[i] & state)) continue;  // not a sink of `state`
      const uint64_t smaller = state & ~(uint64_t{1} << i);
      if (!seen.insert(smaller).second) continue;
      if (static_cast<int64_t>(seen.size()) > bound) return false;
      frontier.push_back(smaller);
    }
  }
  return true;
}

}  // namespace autograph
