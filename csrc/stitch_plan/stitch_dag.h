#pragma once
// What the stitch planner's parts share about the operator DAG: node-level edges, bitsets of nodes,
// the bytes a tensor moves under a grouping, union-find. Internal to the planner (namespace
// stitch_planner); the API is plan_stitch_groups.h.
#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "stitch_plan/plan_stitch_groups.h"

namespace autograph::stitch_planner {

inline std::string Str(int64_t v) { return std::to_string(v); }

// A fixed-size set of node ids.
class Bitset {
 public:
  explicit Bitset(int bits = 0) : words_((bits + 63) / 64, 0) {}
  void Set(int i) { words_[i >> 6] |= uint64_t{1} << (i & 63); }
  void Reset(int i) { words_[i >> 6] &= ~(uint64_t{1} << (i & 63)); }
  bool Test(int i) const { return (words_[i >> 6] >> (i & 63)) & 1; }
  Bitset& operator|=(const Bitset& other) {
    for (size_t w = 0; w < words_.size(); ++w) words_[w] |= other.words_[w];
    return *this;
  }
  bool Intersects(const Bitset& other) const {
    for (size_t w = 0; w < words_.size(); ++w)
      if (words_[w] & other.words_[w]) return true;
    return false;
  }
  template <class Visit>
  void ForEach(Visit visit) const {
    for (size_t w = 0; w < words_.size(); ++w)
      for (uint64_t bits = words_[w]; bits; bits &= bits - 1) visit(static_cast<int>(w * 64 + __builtin_ctzll(bits)));
  }
  void Release() { std::vector<uint64_t>().swap(words_); }

 private:
  std::vector<uint64_t> words_;
};

// Node-level edges (deduplicated) and which tensors each node touches.
struct Dag {
  std::vector<std::vector<int>> succ, pred;
  std::vector<std::vector<int>> tensors_of;  // per node: tensors it produces or reads, ascending
};

Dag BuildDag(const StitchGraph& graph);

// Two reduction splits can share a kernel: equal, or one of them elementwise (-1).
inline bool SplitsCompatible(int a, int b) { return a == -1 || b == -1 || a == b; }

// Union-find root of v, halving paths on the way.
inline int Find(std::vector<int>& parent, int v) {
  while (parent[v] != v) v = parent[v] = parent[parent[v]];
  return v;
}

// Bytes a tensor moves under a grouping (group(v) = -1 for non-stitchable nodes): one write when a
// stitchable producer's group does not keep it (graph output, or a reader elsewhere), and one read per
// other group that reads it.
template <class GroupOf>
int64_t TensorTraffic(const StitchTensor& tensor, GroupOf group, std::vector<int>& scratch) {
  const int producer_group = tensor.producer >= 0 ? group(tensor.producer) : -1;
  int64_t moved = 0;
  if (producer_group >= 0) {
    bool write = tensor.graph_output;
    for (int c : tensor.consumers) write = write || group(c) != producer_group;
    if (write) moved += tensor.bytes;
  }
  scratch.clear();
  for (int c : tensor.consumers) {
    const int g = group(c);
    if (g >= 0 && g != producer_group) scratch.push_back(g);
  }
  std::sort(scratch.begin(), scratch.end());
  moved += tensor.bytes * (std::unique(scratch.begin(), scratch.end()) - scratch.begin());
  return moved;
}

}  // namespace autograph::stitch_planner
