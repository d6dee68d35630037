#include "core/bipartite_matching.h"

#include <limits>
#include <queue>

namespace autograph {

namespace {

class HopcroftKarp {
 public:
  HopcroftKarp(const std::vector<std::vector<int>>& adj, int num_right)
      : adj_(adj), left_(adj.size(), -1), right_(num_right, -1), dist_(adj.size()), next_(adj.size()) {}

  std::vector<int> Solve() {
    while (LayerFreeVertices()) {
      for (size_t u = 0; u < adj_.size(); ++u) next_[u] = 0;
      for (size_t u = 0; u < adj_.size(); ++u)
        if (left_[u] < 0) Augment(static_cast<int>(u));
    }
    return left_;
  }

 private:
  static constexpr int kInf = std::numeric_limits<int>::max();

  // BFS from free left vertices; true if some augmenting path exists.
  bool LayerFreeVertices() {
    std::queue<int> q;
    for (size_t u = 0; u < adj_.size(); ++u) {
      dist_[u] = left_[u] < 0 ? 0 : kInf;
      if (left_[u] < 0) q.push(static_cast<int>(u));
    }
    bool found = false;
    while (!q.empty()) {
      int u = q.front();
      q.pop();
      for (int v : adj_[u]) {
        int w = right_[v];
        if (w < 0) {
          found = true;
        } else if (dist_[w] == kInf) {
          dist_[w] = dist_[u] + 1;
          q.push(w);
        }
      }
    }
    return found;
  }

  // Iterative DFS along the BFS layers, resuming each vertex's adjacency where it stopped.
  bool Augment(int root) {
    std::vector<int> path{root};
    while (!path.empty()) {
      int u = path.back();
      if (next_[u] == adj_[u].size()) {
        dist_[u] = kInf;  // dead end for this phase
        path.pop_back();
        continue;
      }
      int v = adj_[u][next_[u]++];
      int w = right_[v];
      if (w < 0) {
        // Flip the path: each left vertex on it takes the right vertex it advanced through.
        for (size_t i = path.size(); i-- > 0;) {
          int x = path[i];
          int y = adj_[x][next_[x] - 1];
          right_[y] = x;
          left_[x] = y;
        }
        return true;
      }
      if (dist_[w] == dist_[u] + 1) path.push_back(w);
    }
    return false;
  }

  const std::vector<std::vector<int>>& adj_;
  std::vector<int> left_, right_, dist_;
  std::vector<size_t> next_;
};

}  // namespace

std::vector<int> MaximumBipartiteMatching(const std::vector<std::vector<int>>& adjacency, int num_right) {
  return HopcroftKarp(adjacency, num_right).Solve();
}

}  // namespace autograph
