#pragma once
// One stage cut out of its graph so that it can run alone: a small TorchScript graph (or AtenGraph,
// for an exported program) holding clones of the stage's nodes (values produced outside the stage become its inputs, fed from a ValueRecord;
// constants are cloned; values read after the stage become its outputs), an OpGraph with one node
// per stage operator (same metadata, edges among them) and a one-stage Schedule with the same groups
// and strategy. The measured cost model times it with a StageExecutor.
#include <ATen/core/ivalue.h>

#include <vector>

#include "core/op_graph.h"
#include "core/schedule.h"
#include "measure/record_values.h"

namespace autograph {

struct StageSubgraph {
  OpGraph graph;      // owns the cloned graph; node ids in stage order (group by group)
  Schedule schedule;  // one stage
  std::vector<c10::IValue> inputs;  // the recorded values of the clone's inputs, in order
  std::vector<bool> mutated;        // per input: the stage may write it in place, so feed a copy
};

// Throws ScheduleError when the stage is empty, has an empty group, names an operator outside the
// graph or twice, or has an edge between two of its groups or against a group's order.
void ValidateStage(const OpGraph& graph, const Stage& stage);

// Validates the stage first (ValidateStage). Throws Error when a value the stage reads is not in
// `values` (they were recorded on another graph).
StageSubgraph ExtractStage(const OpGraph& graph, const Stage& stage, const ValueRecord& values);
// The same for an OpGraph over an AtenGraph: the stage's ATen nodes in a small AtenGraph of their own,
// the values they read from outside (weights included) its inputs, fed from `values`.
StageSubgraph ExtractStage(const OpGraph& graph, const Stage& stage, const AtenValueRecord& values);

// Per input of graph.graph(): whether some node may write it in place (AliasDb; graph inputs of one
// type are assumed to alias each other, so this errs on the side of true).
std::vector<bool> InputsWrittenInPlace(const OpGraph& graph);

}  // namespace autograph
