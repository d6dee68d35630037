#pragma once
// Schedule: the plan every search returns, the executor runs and the report carries. Stages run one
// after another; the groups of a stage run side by side (one stream each); the operators of a group
// run in order. Operators are named by their id in the operator graph (the report's schedule is
// over the optimized graph). JSON, validation and kernel counts are internal (core/schedule.h).
#include <cstddef>
#include <vector>

namespace autograph {

// How the groups of a stage run: on separate streams (Concurrent), or as one wider kernel (Merge:
// each group is one convolution or linear, all reading the same input; the executor runs them as one
// merged kernel on the stage's first stream, see merged_kernel.h).
enum class StageStrategy { Concurrent, Merge };

struct Stage {
  StageStrategy strategy = StageStrategy::Concurrent;
  std::vector<std::vector<int>> groups;  // each group: OpGraph node ids run in this order on one stream
  // Optional, Concurrent stages only: the stream of each group (distinct, 0..kMaxStreams-1), so a
  // chain of operators keeps one stream across stages and needs no event between its own ops
  // (Nimble). Empty: group i runs on stream i.
  std::vector<int> streams = {};  // (initialized: aggregate inits may leave it out without a warning)
  int StreamOf(size_t group) const { return streams.empty() ? static_cast<int>(group) : streams[group]; }
};

constexpr int kMaxStreams = 64;

struct Schedule {
  std::vector<Stage> stages;
  int num_ops() const;     // total ids listed
  int num_groups() const;  // total groups over all stages
  int max_groups() const;  // widest stage, or highest stream id + 1 if more = streams needed (a Merge
                           // stage runs on one but counts all)
};

}  // namespace autograph
