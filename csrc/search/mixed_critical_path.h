#pragma once
// Mixed critical path cost of a state of a block (AutoGraph): with w(v) a per-operator cost,
//   C(S) = alpha * (longest path of S under w) + (sum of w over S).
// The longest path is what parallel execution cannot hide, the sum is the work concurrent kernels
// compete for. Normalized by 1 + alpha it is a weighted mean of the fully parallel and the fully
// sequential latency of S: an estimate that ranks candidates. The longest path alone is a lower
// bound on any schedule of S when every stage costs at least the operators of each of its groups in
// series (true of the analytical model; see LowerBound).
#include <unordered_map>
#include <utility>
#include <vector>

#include "search/block_dag.h"

namespace autograph {

class MixedCriticalPath {
 public:
  // weights[i]: cost of the block's op i, >= 0.
  MixedCriticalPath(const BlockDag& dag, std::vector<double> weights, double alpha);

  double LowerBound(OpMask state) { return Of(state).longest; }
  // Longest path and estimate of a concurrent stage's ops, not memoized (each is met from few
  // states): the stage costs at least its longest chain, which lies within one group.
  std::pair<double, double> StageBoundAndEstimate(OpMask ops) {
    const Path p = Compute(ops);
    return {p.longest, (alpha_ * p.longest + p.total) / (1 + alpha_)};
  }
  // `memoize` false for sets met from few states (a stage's ops), not worth keeping.
  double Estimate(OpMask state, bool memoize = true) {
    const Path p = memoize ? Of(state) : Compute(state);
    return (alpha_ * p.longest + p.total) / (1 + alpha_);
  }

 private:
  struct Path {
    double longest = 0, total = 0;
  };
  const Path& Of(OpMask state);
  Path Compute(OpMask state);

  const BlockDag& dag_;
  std::vector<double> weights_;
  double alpha_;
  std::vector<double> finish_;  // scratch: longest path ending at each op
  std::unordered_map<OpMask, Path> memo_;
};

}  // namespace autograph
