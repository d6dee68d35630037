// CUDA backend: one host thread launches every group of a stage on its own stream. Group 0 runs on
// the caller's current stream; the other streams belong to the backend, wait on a fork event of the
// caller's stream, and are joined back into it at the end, so a run composes with user code and
// with other streams. Events are recorded only after operators whose outputs another stream
// reads; tensors read across streams are marked with record_stream, so releasing them on the host
// at stage ends never hands their memory to another stream too early. Optionally the whole run is
// captured into a CUDA Graph once per input shape and replayed from static input buffers. A Merge
// stage is one group: its merged kernel runs on the stage's first stream (the caller's), and
// readers on other streams wait on the event recorded after it, like after any operator.
#include "autograph/stage_executor.h"

#ifdef AUTOGRAPH_WITH_CUDA

#include <ATen/cuda/CUDAEvent.h>
#include <ATen/cuda/CUDAGraph.h>
#include <c10/cuda/CUDAFunctions.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <cuda_runtime.h>

#include <map>
#include <mutex>

#include "autograph/operator_flops.h"

namespace autograph {

namespace {

using c10::cuda::CUDAStream;

void MarkUsedOn(const c10::IValue& value, const CUDAStream& stream) {
  if (value.isTensor()) {  // the common case, without collecting into a vector
    if (value.toTensor().is_cuda()) value.toTensor().record_stream(stream);
    return;
  }
  std::vector<at::Tensor> tensors;
  CollectTensors(value, &tensors);
  for (const at::Tensor& t : tensors)
    if (t.is_cuda()) t.record_stream(stream);
}

class CudaStageBackend : public StageBackend {
 public:
  CudaStageBackend(std::shared_ptr<const StagePlan> plan, const ExecutorOptions& options)
      : plan_(std::move(plan)), device_(options.device), cuda_graph_(options.cuda_graph) {
    if (!device_.has_index()) device_ = c10::Device(c10::kCUDA, 0);
  }

  ~CudaStageBackend() override {
    for (cudaStream_t s : owned_streams_) cudaStreamDestroy(s);
  }

  std::vector<c10::IValue> Run(std::vector<c10::IValue> inputs) const override {
    if (c10::cuda::device_count() <= device_.index()) {
      throw Error("this program runs on " + device_.str() + " but that CUDA device is not available here");
    }
    c10::cuda::CUDAGuard device_guard(device_);
    if (!cuda_graph_) return RunEager(std::move(inputs));
    return RunCaptured(std::move(inputs));
  }

 private:
  // Streams 1..n-1 are created once per backend (stream 0 is whatever the caller's current stream is).
  const std::vector<CUDAStream>& Streams() const {
    std::call_once(streams_once_, [this] {
      for (int i = 1; i < plan_->num_streams; ++i) {
        cudaStream_t raw;
        C10_CUDA_CHECK(cudaStreamCreateWithFlags(&raw, cudaStreamNonBlocking));
        owned_streams_.push_back(raw);
        streams_.push_back(c10::cuda::getStreamFromExternal(raw, device_.index()));
      }
    });
    return streams_;
  }

  // A run's events come from a free list: concurrent runs never share one.
  std::vector<at::cuda::CUDAEvent> AcquireEvents() const {
    std::lock_guard<std::mutex> lock(events_mutex_);
    if (!free_events_.empty()) {
      auto events = std::move(free_events_.back());
      free_events_.pop_back();
      return events;
    }
    return std::vector<at::cuda::CUDAEvent>(plan_->num_events + plan_->num_streams + 1);
  }
  void ReleaseEvents(std::vector<at::cuda::CUDAEvent> events) const {
    std::lock_guard<std::mutex> lock(events_mutex_);
    free_events_.push_back(std::move(events));
  }

  std::vector<c10::IValue> RunEager(std::vector<c10::IValue> inputs) const {
    const StagePlan& plan = *plan_;
    const CUDAStream caller = c10::cuda::getCurrentCUDAStream(device_.index());
    std::vector<CUDAStream> streams{caller};
    for (const CUDAStream& s : Streams()) streams.push_back(s);
    auto events = AcquireEvents();
    at::cuda::CUDAEvent& fork = events[plan.num_events];
    if (plan.num_streams > 1) {
      fork.record(caller);
      for (int i = 1; i < plan.num_streams; ++i) fork.block(streams[i]);
    }

    CompiledGraph::Table table = plan.compiled.NewTable(std::move(inputs));
    torch::jit::Stack stack;
    size_t op = 0;
    for (size_t s = 0; s < plan.stages.size(); ++s) {
      for (const StagePlan::GroupSteps& group : plan.stages[s]) {
        const CUDAStream& stream = streams[group.stream];
        c10::cuda::CUDAStreamGuard stream_guard(stream);
        for (size_t step = group.begin; step < group.end; ++op) {
          const StagePlan::OpSync& sync = plan.ops_in_order[op];
          for (int e : sync.wait_events) events[e].block(stream);
          for (int slot : sync.foreign_slots) MarkUsedOn(table[slot], stream);
          while (step < sync.end) {
            // One node, or a Merge stage's merged kernel (its outputs are made on this stream).
            const size_t next = plan.Run(step, table, stack);
            // Same-group readers only: later allocations on this stream are ordered after them.
            for (; step < next; ++step)
              for (int slot : plan.release.after_step[step]) table[slot] = c10::IValue();
          }
          if (sync.record_event >= 0) events[sync.record_event].record(stream);
        }
      }
      for (int slot : plan.release.after_phase[s]) table[slot] = c10::IValue();
    }
    for (int i = 1; i < plan.num_streams; ++i) {
      at::cuda::CUDAEvent& join = events[plan.num_events + i];
      join.record(streams[i]);
      join.block(caller);
    }
    ReleaseEvents(std::move(events));  // every wait on them is already enqueued
    return plan.compiled.Outputs(table);
  }

  struct Captured {
    std::unique_ptr<at::cuda::CUDAGraph> graph;
    std::vector<at::Tensor> static_inputs;
    std::vector<c10::IValue> static_outputs;
  };

  static std::vector<int64_t> ShapeKey(const std::vector<c10::IValue>& inputs) {
    std::vector<int64_t> key;
    for (const auto& v : inputs) {
      if (!v.isTensor()) throw InputError("CUDA Graph mode takes tensor inputs only");
      const at::Tensor& t = v.toTensor();
      key.push_back(static_cast<int64_t>(t.scalar_type()));
      key.push_back(t.dim());
      for (int64_t d : t.sizes()) key.push_back(d);
    }
    return key;
  }

  // One capture per input shape; replays copy the inputs into the static buffers and clone the
  // static outputs, so callers may keep what they get. Serialized: one graph, one set of buffers.
  std::vector<c10::IValue> RunCaptured(std::vector<c10::IValue> inputs) const {
    std::lock_guard<std::mutex> lock(capture_mutex_);
    const CUDAStream caller = c10::cuda::getCurrentCUDAStream(device_.index());
    auto key = ShapeKey(inputs);
    auto it = captures_.find(key);
    if (it == captures_.end()) {
      Captured c;
      for (const auto& v : inputs) c.static_inputs.push_back(v.toTensor().clone());
      std::vector<c10::IValue> static_values(c.static_inputs.begin(), c.static_inputs.end());
      // Capture on a side stream (never the legacy default stream), after one eager warm-up run
      // that initializes cuBLAS/cuDNN workspaces outside the capture.
      CUDAStream side = c10::cuda::getStreamFromPool(false, device_.index());
      at::cuda::CUDAEvent ready;
      ready.record(caller);
      ready.block(side);
      {
        c10::cuda::CUDAStreamGuard guard(side);
        RunEager(static_values);
        side.synchronize();
        c.graph = std::make_unique<at::cuda::CUDAGraph>();
        c.graph->capture_begin();
        c.static_outputs = RunEager(static_values);
        c.graph->capture_end();
      }
      at::cuda::CUDAEvent captured;
      captured.record(side);
      captured.block(caller);
      it = captures_.emplace(std::move(key), std::move(c)).first;
    }
    Captured& c = it->second;
    for (size_t i = 0; i < inputs.size(); ++i) c.static_inputs[i].copy_(inputs[i].toTensor(), /*non_blocking=*/true);
    c.graph->replay();
    std::vector<c10::IValue> outputs;
    for (const auto& v : c.static_outputs) outputs.push_back(v.isTensor() ? c10::IValue(v.toTensor().clone()) : v);
    return outputs;
  }

  std::shared_ptr<const StagePlan> plan_;
  c10::Device device_;
  bool cuda_graph_;
  mutable std::once_flag streams_once_;
  mutable std::vector<cudaStream_t> owned_streams_;
  mutable std::vector<CUDAStream> streams_;
  mutable std::mutex events_mutex_;
  mutable std::vector<std::vector<at::cuda::CUDAEvent>> free_events_;
  mutable std::mutex capture_mutex_;
  mutable std::map<std::vector<int64_t>, Captured> captures_;
};

}  // namespace

std::unique_ptr<StageBackend> MakeCudaStageBackend(std::shared_ptr<const StagePlan> plan, const ExecutorOptions& options) {
  return std::make_unique<CudaStageBackend>(std::move(plan), options);
}

}  // namespace autograph

#else  // !AUTOGRAPH_WITH_CUDA

namespace autograph {
std::unique_ptr<StageBackend> MakeCudaStageBackend(std::shared_ptr<const StagePlan>, const ExecutorOptions& options) {
  throw Error("autograph was built without CUDA, so it cannot run on " + options.device.str() +
              "; rebuild where nvcc is available or use --device cpu");
}
}  // namespace autograph

#endif
