#pragma once
// The greedy stitch planner: answers for subproblems over the ILP's size cap, and when the ILP runs out
// of time. Merges groups pairwise, best saving first, while the plan stays feasible; then merges groups
// that share no tensor (one launch saved each) and repeats.
#include <cstdint>
#include <queue>
#include <vector>

#include "stitch_plan/plan_stitch_groups.h"
#include "stitch_plan/stitch_dag.h"

namespace autograph::stitch_planner {

// Groups are union-find sets named by their smallest node. Each group keeps how it uses each tensor
// (produces it, how many of its readers it holds), so a merge's saving is one walk over two short
// sorted lists; reachability between vertices of the contracted graph is kept as bitsets, so a merge
// is checked in O(nodes / 64) and applied in O(nodes^2 / 64) at worst.
class GreedyStitchPlanner {
 public:
  // `start` (a group label per node, -1 for non-stitchable ones) must be feasible; only groups made of
  // `movable` nodes merge further.
  GreedyStitchPlanner(const StitchGraph& graph, const Dag& dag, const StitchPlanOptions& options,
                      const std::vector<int>& start, const std::vector<char>& movable);

  // The grouping: per node, the smallest node of its group, -1 for non-stitchable nodes.
  std::vector<int> Run();

 private:
  struct TensorUse {
    int tensor;
    int readers;  // entries of tensor.consumers inside the group
    bool produces;
  };

  struct Candidate {
    double gain;
    int a, b, version_a, version_b;
    bool operator<(const Candidate& other) const {  // max-heap on gain; ties: smaller ids first
      if (gain != other.gain) return gain < other.gain;
      if (a != other.a) return a > other.a;
      return b > other.b;
    }
  };

  int Group(int v) { return Find(parent_, v); }
  bool CanMerge(int a, int b);
  // Microseconds saved by merging groups a and b: a launch, plus the traffic of tensors both use.
  double Gain(int a, int b) const;
  void PushCandidates(int a);
  // One pass over same-domain pairs of movable groups; true if anything merged.
  bool MergeUnrelated();
  // Merges group b into group a (a < b, both group names).
  void Merge(int a, int b);

  const StitchGraph& graph_;
  const StitchPlanOptions& options_;
  std::vector<int> parent_, version_, split_;
  std::vector<int64_t> weight_;
  std::vector<char> movable_;
  std::vector<std::vector<TensorUse>> uses_;  // per group, ascending tensor ids
  std::vector<std::vector<int>> apart_;
  std::vector<Bitset> descendants_, ancestors_;
  std::priority_queue<Candidate> heap_;
};

}  // namespace autograph::stitch_planner
