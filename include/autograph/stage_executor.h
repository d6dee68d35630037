#pragma once
// Runs a Schedule: stages one after another; the groups of a stage concurrently — on CUDA streams
// (one stream per group, events only where a dependence crosses streams, forked from and joined into
// the caller's current stream) or on CPU threads (a pool owned by the executor). An intermediate is
// released right after its last reader when one group reads it, else after the last stage that does.
#include <ATen/core/ivalue.h>
#include <c10/core/Device.h>

#include <memory>
#include <vector>

#include "autograph/compiled_graph.h"
#include "autograph/op_graph.h"
#include "autograph/schedule.h"

namespace autograph {

struct ExecutorOptions {
  c10::Device device = c10::kCPU;
  bool cuda_graph = false;  // CUDA only: capture the whole multi-stream run once per input shape
};

// The schedule compiled into steps: immutable, shared by the backends.
struct StagePlan {
  struct GroupSteps {
    size_t begin = 0, end = 0;  // steps [begin, end) of the CompiledGraph
    int stream = 0;             // index of the group within its stage
  };
  // Cross-stream synchronization of one operator on the CUDA backend.
  struct OpSync {
    size_t begin = 0, end = 0;        // its steps
    int stream = 0;
    std::vector<int> wait_events;     // events to wait on before its first step
    int record_event = -1;            // event to record after its last step, or -1
    std::vector<int> foreign_slots;   // slots it reads that another stream produced (record_stream)
  };

  StagePlan(const OpGraph& graph, const Schedule& schedule);

  CompiledGraph compiled;  // steps in schedule order
  std::vector<std::vector<GroupSteps>> stages;
  CompiledGraph::ReleasePlan release;  // phases are stages
  std::vector<OpSync> ops_in_order;  // operators in schedule order
  int num_streams = 1;
  int num_events = 0;
};

class StageBackend {
 public:
  virtual ~StageBackend() = default;
  virtual std::vector<c10::IValue> Run(std::vector<c10::IValue> inputs) const = 0;
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
  const StagePlan& plan() const { return *plan_; }

 private:
  std::shared_ptr<const StagePlan> plan_;
  std::unique_ptr<StageBackend> backend_;
};

}  // namespace autograph
