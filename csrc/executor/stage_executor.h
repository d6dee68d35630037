#pragma once
// Runs a Schedule: stages one after another; the groups of a stage concurrently — on CUDA streams
// (one stream per group, events only where a dependence crosses streams, forked from and joined into
// the caller's current stream) or on CPU threads (a pool owned by the executor). A Merge stage is one
// merged convolution on the stage's first stream, its weights merged once when the plan is built.
// An intermediate is released right after its last reader when one group reads it, else after the
// last stage that does.
#include <ATen/core/ivalue.h>
#include <c10/core/Device.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/op_graph.h"
#include "core/schedule.h"
#include "executor/compiled_graph.h"
#include "autograph/executor_options.h"
#include "merge/merged_kernel.h"

namespace autograph {

// The schedule compiled into steps: immutable, shared by the backends. A Merge stage becomes one
// group on stream 0 whose steps are its operators' nodes, the anchors (convolutions or linears)
// contiguous in the middle (replaced by one MergedSteps kernel), the nodes before and after them around it.
struct StagePlan {
  struct GroupSteps {
    size_t begin = 0, end = 0;  // steps [begin, end) of the CompiledGraph
    int stream = 0;             // index of the group within its stage
  };
  // The convolutions or linears of a Merge stage, run as one kernel instead of their steps [begin, end).
  struct MergedSteps {
    size_t begin = 0, end = 0;
    int input_slot = -1;
    std::vector<int> output_slots;  // one per merged operator, in the stage's group order
    std::vector<bool> contiguous;   // copy the slice into its own memory (see stage_plan.cpp)
    std::vector<size_t> slice_of;   // which of the kernel's outputs is each operator's
    MergedKernel kernel;            // built from the graph's frozen weights with the plan
    std::string label;              // "the merged kernel of ops 3, 5 (stage 2)", for errors
  };
  // Cross-stream synchronization of one operator (or of a whole Merge stage) on the CUDA backend.
  struct OpSync {
    size_t begin = 0, end = 0;        // its steps
    int stream = 0;
    std::vector<int> wait_events;     // events to wait on before its first step
    int record_event = -1;            // event to record after its last step, or -1
    std::vector<int> foreign_slots;   // slots it reads that another stream produced (record_stream)
  };

  // `full_float32`: ExecutorOptions::full_float32.
  StagePlan(const OpGraph& graph, const Schedule& schedule, bool full_float32 = false);

  // Runs step `step` — or, when a merged kernel starts there, the merged kernel — and returns the
  // step after what ran. Throws InputError naming the node or the merged kernel that failed.
  size_t Run(size_t step, CompiledGraph::Table& table, torch::jit::Stack& stack) const;

  CompiledGraph compiled;  // steps in schedule order
  std::vector<std::vector<GroupSteps>> stages;
  CompiledGraph::ReleasePlan release;  // phases are stages
  std::vector<OpSync> ops_in_order;  // operators in schedule order; one entry per Merge stage
  std::vector<MergedSteps> merged;
  std::vector<int> merged_at_step;  // per step: the index in `merged` of the kernel that starts there, or -1
  int num_streams = 1;
  int num_events = 0;
};

class StageBackend {
 public:
  virtual ~StageBackend() = default;
  virtual std::vector<c10::IValue> Run(std::vector<c10::IValue> inputs) const = 0;
  // A run bound to `inputs`, for timing: what each call costs is what the program costs per run
  // minus moving inputs in and outputs out. On the CUDA backend in graph mode, a graph captured with
  // `inputs` themselves as its static buffers (capture now, replay per call; a run that writes an
  // input in place writes it on every call); elsewhere Run on them. The backend must outlive it.
  virtual std::function<void()> BindInputs(std::vector<c10::IValue> inputs) const {
    return [this, inputs = std::move(inputs)] { Run(inputs); };
  }
};

std::unique_ptr<StageBackend> MakeCpuStageBackend(std::shared_ptr<const StagePlan> plan);
// Throws Error when autograph was built without CUDA.
std::unique_ptr<StageBackend> MakeCudaStageBackend(std::shared_ptr<const StagePlan> plan, const ExecutorOptions& options);

class StageExecutor {
 public:
  // The schedule must validate against the graph (ValidateSchedule).
  StageExecutor(const OpGraph& graph, const Schedule& schedule, const ExecutorOptions& options = {});
  // Thread-safe.
  std::vector<c10::IValue> Run(std::vector<c10::IValue> inputs) const { return backend_->Run(std::move(inputs)); }
  // See StageBackend::BindInputs; the executor must outlive the result.
  std::function<void()> BindInputs(std::vector<c10::IValue> inputs) const {
    return backend_->BindInputs(std::move(inputs));
  }
  const StagePlan& plan() const { return *plan_; }

 private:
  std::shared_ptr<const StagePlan> plan_;
  std::unique_ptr<StageBackend> backend_;
};

}  // namespace autograph
