#include "search/mixed_critical_path.h"

#include <algorithm>

namespace autograph {

MixedCriticalPath::MixedCriticalPath(const BlockDag& dag, std::vector<double> weights, double alpha)
    : dag_(dag), weights_(std::move(weights)), alpha_(alpha), finish_(dag.size(), 0.0) {}

const MixedCriticalPath::Path& MixedCriticalPath::Of(OpMask state) {
  if (auto it = memo_.find(state); it != memo_.end()) return it->second;
  return memo_.emplace(state, Compute(state)).first->second;
}

MixedCriticalPath::Path MixedCriticalPath::Compute(OpMask state) {
  Path path;
  // Block indices ascend in topological order, so predecessors are finished first.
  for (OpMask rest = state; rest; rest &= rest - 1) {
    const int i = LowestBit(rest);
    double start = 0;
    for (OpMask preds = dag_.preds(i) & state; preds; preds &= preds - 1) start = std::max(start, finish_[LowestBit(preds)]);
    finish_[i] = start + weights_[i];
    path.longest = std::max(path.longest, finish_[i]);
    path.total += weights_[i];
  }
  return path;
}

}  // namespace autograph
