#include "search/stage_builder.h"

#include <algorithm>

namespace autograph {

StageBuilder::StageBuilder(const OpGraph& graph)
    : graph_(graph), stage_of_(graph.size(), -1), group_of_(graph.size(), -1), pending_preds_(graph.size()) {
  for (int v = 0; v < graph.size(); ++v) {
    pending_preds_[v] = static_cast<int>(graph.preds(v).size());
    if (pending_preds_[v] == 0) ready_.push_back(v);
  }
}

void StageBuilder::BeginStage(int index) {
  stage_ = Stage{};
  stage_index_ = index;
}

int StageBuilder::AddGroup() {
  stage_.groups.emplace_back();
  return static_cast<int>(stage_.groups.size()) - 1;
}

void StageBuilder::Place(int v, int g) {
  stage_of_[v] = stage_index_;
  group_of_[v] = g;
  stage_.groups[g].push_back(v);
  ++num_placed_;
}

bool StageBuilder::CanJoin(int w, int g) const {
  for (int p : graph_.preds(w)) {
    if (stage_of_[p] < 0) return false;
    if (stage_of_[p] == stage_index_ && group_of_[p] != g) return false;
  }
  return true;
}

Stage StageBuilder::CloseStage() {
  ready_.erase(std::remove_if(ready_.begin(), ready_.end(), [this](int v) { return stage_of_[v] >= 0; }),
               ready_.end());
  for (const auto& group : stage_.groups)
    for (int v : group)
      for (int w : graph_.succs(v))
        if (--pending_preds_[w] == 0 && stage_of_[w] < 0) ready_.push_back(w);
  return std::move(stage_);
}

}  // namespace autograph
