#pragma once
// StageCostMemo: CostModel::StageMs of a block's stages, asked once per (ops, strategy). The dynamic
// programs meet the same ending from many states; a measured cost model would rerun it each time.
#include <cstdint>
#include <unordered_map>

#include "search/block_dag.h"
#include "search/cost/cost_model.h"

namespace autograph {

class StageCostMemo {
 public:
  StageCostMemo(const BlockDag& dag, CostModel& cost) : dag_(dag), cost_(cost) {}

  double operator()(OpMask ending, StageStrategy strategy) {
    auto& memo = strategy == StageStrategy::Merge ? merged_ms_ : concurrent_ms_;
    if (auto it = memo.find(ending); it != memo.end()) return it->second;
    const double ms = cost_.StageMs(dag_.graph(), dag_.MakeStage(ending, strategy));
    memo.emplace(ending, ms);
    return ms;
  }

  // Distinct stages costed so far.
  int64_t size() const { return static_cast<int64_t>(concurrent_ms_.size() + merged_ms_.size()); }

 private:
  const BlockDag& dag_;
  CostModel& cost_;
  std::unordered_map<OpMask, double> concurrent_ms_, merged_ms_;
};

}  // namespace autograph
