#pragma once
// Bookkeeping shared by the schedulers that build stages one after another: which operators are
// placed where, which are ready (all predecessors in closed stages), and whether an operator may
// join a group of the open stage.
#include <vector>

#include "core/op_graph.h"
#include "core/schedule.h"

namespace autograph {

class StageBuilder {
 public:
  explicit StageBuilder(const OpGraph& graph);

  bool done() const { return num_placed_ == graph_.size(); }
  void BeginStage(int index);  // opens stage `index`, empty
  int AddGroup();              // a new empty group of the open stage; returns its index
  void Place(int v, int g);    // appends v to group g of the open stage
  // All of w's predecessors are in closed stages or in group g of the open stage.
  bool CanJoin(int w, int g) const;
  Stage CloseStage();          // returns the stage; ops it unblocks become ready

  // Ready ops; those already placed in the open stage stay listed until it closes.
  const std::vector<int>& ready() const { return ready_; }
  bool placed(int v) const { return stage_of_[v] >= 0; }
  int stage_of(int v) const { return stage_of_[v]; }  // -1 while unplaced
  int group_of(int v) const { return group_of_[v]; }
  int stage_index() const { return stage_index_; }
  const Stage& stage() const { return stage_; }

 private:
  const OpGraph& graph_;
  std::vector<int> stage_of_, group_of_;
  std::vector<int> pending_preds_;  // predecessors not yet in a closed stage
  std::vector<int> ready_;
  int num_placed_ = 0;
  Stage stage_;
  int stage_index_ = 0;
};

}  // namespace autograph
