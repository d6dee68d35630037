// CUDA backend: one host thread launches every group of a stage on its own stream. Group 0 runs on
// the caller's current stream; the other groups run on the process's side streams (StreamPool),
// which wait on a fork event of the caller's stream and are joined back into it at the end, so a run
// composes with user code and with other streams. Events are recorded only after operators whose
// outputs another stream reads. Values made on one stream and read on another are marked with
// record_stream, so releasing them on the host at stage ends never hands their memory to another
// stream too early; inputs and constants stay in the value table until after the join and need no
// mark. Outputs made on side streams are marked used on the caller's stream.
//
// Optionally the whole run is captured into a CUDA Graph once per input signature and replayed: the
// user's tensors are copied into the graph's buffers, weights and packages are read where they are
// (CaptureInputs). Replays are ordered one after another on the device whatever stream each
// caller uses, and outputs (inside tuples, lists and dicts too) are copied out of the graph's
// buffers. A signature whose capture fails (an operator that synchronizes, say) ends the capture,
// discards the graph and runs eagerly from then on, with a warning.
//
// A Merge stage is one group: its merged kernel runs on the stage's first stream (the caller's), and
// readers on other streams wait on the event recorded after it, like after any operator.
#include "executor/stage_executor.h"

#ifdef AUTOGRAPH_WITH_CUDA

#include <ATen/core/CachingHostAllocator.h>
#include <ATen/cuda/CUDAContextLight.h>
#include <ATen/cuda/CUDAEvent.h>
#include <ATen/cuda/CUDAGeneratorImpl.h>
#include <ATen/cuda/CUDAGraph.h>
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAFunctions.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <cuda_runtime.h>

#include <functional>
#include <map>
#include <mutex>
#include <optional>

#include "autograph/error.h"
#include "core/operator_flops.h"
#include "executor/capture_inputs.h"
#include "executor/capture_keep_alive.h"
#include "executor/clone_tensors.h"
#include "executor/recently_used.h"
#include "executor/stream_pool.h"

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

// A CUDAGraph whose failed capture can give the random generators back. capture_begin puts every
// generator state registered with the graph (the device's default generator at least) into capture
// mode, and only a successful capture_end takes them out: after a failed capture every later random
// operator on the device (torch.randn in the user's own code too) would throw "Offset increment
// outside graph capture". The states are protected members of CUDAGraph, hence the subclass; what
// CUDAGeneratorState::capture_epilogue does (libtorch_cuda does not export it) is clear capturing_.
class AbandonableGraph : public at::cuda::CUDAGraph {
 public:
  void EndGeneratorCaptures() {
    for (auto& entry : captured_generator_states_) entry.first->capturing_ = false;
  }
  // Whether the capture got as far as cudaStreamEndCapture: then CUDAGraph::reset (the destructor)
  // releases the memory pool itself, and a second release underflows the pool's use count (the
  // caching allocator's "uc >= 0" assertion, which aborts the process).
  bool ReleasesPoolItself() const { return capture_ended_; }
};

// One capture: the graph and the memory it replays on.
struct Captured {
  // What the graph replays without calling it again (a compiled part's container): declared first, so
  // destroyed last, after the graph.
  CaptureKeepAlive::Held keep_alive;
  std::unique_ptr<AbandonableGraph> graph;  // null: the capture failed; this signature runs eagerly
  std::vector<c10::IValue> static_inputs;      // tensors: the buffers the graph reads
  std::vector<c10::IValue> static_outputs;     // where the graph writes
  at::cuda::CUDAEvent last_use;                // after the latest replay and the copies of its outputs
  bool used = false;

  Captured() = default;
  Captured(const Captured&) = delete;
  Captured& operator=(const Captured&) = delete;
  ~Captured() {
    // The graph's memory pool is released with it: let replays in flight finish first.
    if (used) {
      try {
        last_use.synchronize();
      } catch (...) {  // a destructor must not throw
      }
    }
  }
};

class CudaStageBackend : public StageBackend {
 public:
  CudaStageBackend(std::shared_ptr<const StagePlan> plan, const ExecutorOptions& options)
      : plan_(std::move(plan)), device_(options.device), cuda_graph_(options.cuda_graph),
        inputs_(options.bound_inputs), recent_captures_(static_cast<size_t>(options.max_cuda_graphs)) {
    if (!device_.has_index()) device_ = c10::Device(c10::kCUDA, 0);
  }

  std::vector<c10::IValue> Run(std::vector<c10::IValue> inputs) const override {
    CheckDevice();
    c10::cuda::CUDAGuard device_guard(device_);
    if (!cuda_graph_) return RunEager(std::move(inputs));
    return RunCaptured(std::move(inputs));
  }

  // Timing a stage the way the program runs it: in graph mode a graph captured with `inputs`
  // themselves as its static buffers, so a timed replay copies nothing in or out.
  std::function<void()> BindInputs(std::vector<c10::IValue> inputs) const override {
    CheckDevice();
    if (cuda_graph_ && inputs_.KeyOf(inputs)) {
      c10::cuda::CUDAGuard device_guard(device_);
      std::lock_guard<std::mutex> lock(capture_mutex_);
      std::shared_ptr<Captured> captured = Capture(std::move(inputs));
      if (captured->graph) {
        return [captured, device = device_] {
          c10::cuda::CUDAGuard guard(device);
          captured->graph->replay();
          captured->last_use.record(c10::cuda::getCurrentCUDAStream(device.index()));
          captured->used = true;
        };
      }
      inputs = captured->static_inputs;
    }
    return [this, inputs = std::move(inputs)] {
      c10::cuda::CUDAGuard device_guard(device_);
      RunEager(inputs);
    };
  }

 private:
  void CheckDevice() const {
    if (c10::cuda::device_count() <= device_.index()) {
      throw Error("this program runs on " + device_.str() + " but that CUDA device is not available here");
    }
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

  // `use`: the side streams of eager runs, or of a capture (under StreamPool::CaptureMutex()).
  std::vector<c10::IValue> RunEager(std::vector<c10::IValue> inputs,
                                    StreamPool::Use use = StreamPool::Use::kRun) const {
    const StagePlan& plan = *plan_;
    const CUDAStream caller = c10::cuda::getCurrentCUDAStream(device_.index());
    std::vector<CUDAStream> streams{caller};
    for (int i = 1; i < plan.num_streams; ++i) streams.push_back(StreamPool::Side(device_.index(), i - 1, use));
    auto events = AcquireEvents();
    at::cuda::CUDAEvent& fork = events[plan.num_events];
    if (plan.num_streams > 1) {
      fork.record(caller);
      for (int i = 1; i < plan.num_streams; ++i) fork.block(streams[i]);
    }
    // Every side stream is joined back into the caller's, after a failure too: the caller's later
    // work (or a capture being ended) must not find a stream still forked off.
    auto join = [&] {
      for (int i = 1; i < plan.num_streams; ++i) {
        at::cuda::CUDAEvent& joined = events[plan.num_events + i];
        joined.record(streams[i]);
        joined.block(caller);
      }
    };

    CompiledGraph::Table table = plan.compiled.NewTable(std::move(inputs));
    torch::jit::Stack stack;
    try {
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
    } catch (...) {
      join();
      throw;
    }
    join();
    ReleaseEvents(std::move(events));  // every wait on them is already enqueued
    std::vector<c10::IValue> outputs = plan.compiled.Outputs(table);
    // An output made on a side stream is used next on the caller's: freed later, its block must not
    // go back to the side stream's pool before the caller's work on it is done. (record_stream is a
    // no-op for memory allocated on the caller's stream.)
    if (plan.num_streams > 1)
      for (const c10::IValue& v : outputs) MarkUsedOn(v, caller);
    return outputs;
  }

  // Ends a capture that failed and gives back what capture_begin took: the stream leaves capture
  // mode, the partial graph is destroyed, and the allocator stops routing this stream's allocations
  // into the graph's pool and releases that pool (unless the graph's own reset will). CUDAGraph::
  // capture_end does not clean up when the capture was invalidated, so this is done here, each step
  // on its own (one may already be done).
  void AbandonCapture(const CUDAStream& stream, const at::cuda::MempoolId_t& pool, bool release_pool) const {
    cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
    if (cudaStreamIsCapturing(stream.stream(), &status) == cudaSuccess && status != cudaStreamCaptureStatusNone) {
      cudaGraph_t partial = nullptr;
      if (cudaStreamEndCapture(stream.stream(), &partial) == cudaSuccess && partial) cudaGraphDestroy(partial);
    }
    (void)cudaGetLastError();  // the failed capture's error is reported by the caller, not by the next CUDA call
    // Each step on its own: capture_end may have done some before failing.
    auto attempt = [](const std::function<void()>& step) {
      try {
        step();
      } catch (...) {
      }
    };
    const c10::DeviceIndex device = device_.index();
    attempt([&] { c10::cuda::CUDACachingAllocator::endAllocateToPool(device, pool); });
    attempt([&] { at::getHostAllocator(at::kCUDA)->end_allocate_to_pool(pool); });
    if (!release_pool) return;
    attempt([&] { c10::cuda::CUDACachingAllocator::releasePool(device, pool); });
    attempt([&] { at::getHostAllocator(at::kCUDA)->release_pool(pool); });
  }

  // The memory pools of released graphs stay reserved by the caching allocator until it empties its
  // cache, which it cannot do during a capture (cudaFree is not allowed then). A search that captures
  // thousands of stages one after another (nasnet_a_mobile's did, on a GPU's whole memory) then
  // fails its captures with "out of memory" although the memory is free for the taking. So the cache
  // is emptied before a capture once three quarters of the device are taken.
  void EmptyCacheIfTight() const {
    size_t free = 0, total = 0;
    if (cudaMemGetInfo(&free, &total) != cudaSuccess || total == 0) {
      (void)cudaGetLastError();
      return;
    }
    if (free >= total / 4) return;
    try {
      c10::cuda::CUDACachingAllocator::emptyCache();
    } catch (...) {  // another thread's capture under way: this capture may still fit
    }
  }

  // Captures one run on `static_inputs` (the graph reads and writes their memory on every replay).
  // The caller's stream waits for the capture. Holds capture_mutex_.
  std::shared_ptr<Captured> Capture(std::vector<c10::IValue> static_inputs) const {
    auto c = std::make_shared<Captured>();
    c->static_inputs = std::move(static_inputs);
    const CUDAStream caller = c10::cuda::getCurrentCUDAStream(device_.index());
    // Capture on a side stream (never the legacy default stream), after one eager warm-up run that
    // initializes cuDNN and cuBLAS outside the capture. Thread-local capture mode: other threads may keep
    // calling cudaMalloc meanwhile.
    CUDAStream side = c10::cuda::getStreamFromPool(false, device_.index());
    // One capture at a time in the process, on side streams no eager run uses (stream_pool.h).
    std::lock_guard<std::recursive_mutex> one_capture(StreamPool::CaptureMutex());
    at::cuda::CUDAEvent ready;
    ready.record(caller);
    ready.block(side);
    {
      c10::cuda::CUDAStreamGuard guard(side);
      RunEager(c->static_inputs, StreamPool::Use::kCapture);
      side.synchronize();
      EmptyCacheIfTight();
      auto graph = std::make_unique<AbandonableGraph>();
      const at::cuda::MempoolId_t pool = at::cuda::graph_pool_handle();
      bool began = false;
      // cuBLAS keeps a workspace per handle and stream, which torch frees whenever the process clears
      // them (torch.compile's CUDA Graph trees do, around each recording): a graph whose matmuls write a
      // freed workspace corrupts what got that memory next. Cleared now, the capture's matmuls get their
      // workspace from the graph's own pool, which lives as long as the graph; cleared again after, no
      // eager run writes into it.
      at::cuda::clearCublasWorkspaces();
      try {
        graph->capture_begin(pool, cudaStreamCaptureModeThreadLocal);
        began = true;
        const CaptureKeepAlive keep(&c->keep_alive);
        c->static_outputs = RunEager(c->static_inputs, StreamPool::Use::kCapture);
        graph->capture_end();
        c->graph = std::move(graph);
        at::cuda::clearCublasWorkspaces();
      } catch (const std::exception& e) {
        c->static_outputs.clear();  // partial results live in the graph's pool: free them first
        at::cuda::clearCublasWorkspaces();  // and the workspaces made in it, before the pool goes
        if (began) AbandonCapture(side, pool, /*release_pool=*/!graph->ReleasesPoolItself());
        graph->EndGeneratorCaptures();  // capture_begin may have put them in capture mode before it threw
        graph.reset();
        TORCH_WARN("autograph: capturing a CUDA Graph failed (", FirstLineOf(e),
                   "); inputs of this shape and type run without a graph from now on");
      }
    }
    at::cuda::CUDAEvent captured;
    captured.record(side);
    captured.block(caller);
    return c;
  }

  // Serialized on the host (one graph, one set of buffers per signature) and on the device: each
  // replay waits for the previous one's outputs to be copied out, whatever stream that caller used.
  std::vector<c10::IValue> RunCaptured(std::vector<c10::IValue> inputs) const {
    std::lock_guard<std::mutex> lock(capture_mutex_);
    std::optional<CaptureKey> key = inputs_.KeyOf(inputs);
    if (!key) {
      TORCH_WARN_ONCE("autograph: CUDA Graph mode captures tensor, number, bool, string and list-of-number "
                      "inputs only; this program runs without a graph for other inputs");
      return RunEager(std::move(inputs));
    }
    // Beyond max_cuda_graphs signatures the least recently used capture goes, and its memory pool with
    // it (after its last replay): a server's many shapes must not each hold a graph forever.
    const std::vector<CaptureKey> evicted = recent_captures_.Use(*key);
    for (const CaptureKey& old : evicted) captures_.erase(old);
    if (!evicted.empty()) {
      TORCH_WARN_ONCE("autograph: this program has seen more input shapes than max_cuda_graphs (",
                      recent_captures_.limit(), "); the least recently used CUDA Graphs are released and "
                      "captured again when their shapes return");
    }
    auto it = captures_.find(*key);
    if (it == captures_.end()) it = captures_.emplace(std::move(*key), Capture(inputs_.Buffers(inputs))).first;
    Captured& c = *it->second;  // (evictions happen above, under the same lock: never this one)
    if (!c.graph) return RunEager(std::move(inputs));
    const CUDAStream caller = c10::cuda::getCurrentCUDAStream(device_.index());
    if (c.used) c.last_use.block(caller);
    inputs_.CopyInto(inputs, c.static_inputs);
    c.graph->replay();
    std::vector<c10::IValue> outputs;
    outputs.reserve(c.static_outputs.size());
    for (const c10::IValue& v : c.static_outputs) outputs.push_back(CloneTensors(v));
    c.last_use.record(caller);
    c.used = true;
    return outputs;
  }

  std::shared_ptr<const StagePlan> plan_;
  c10::Device device_;
  bool cuda_graph_;
  mutable std::mutex events_mutex_;
  mutable std::vector<std::vector<at::cuda::CUDAEvent>> free_events_;
  mutable std::mutex capture_mutex_;
  CaptureInputs inputs_;  // which inputs a replay copies
  mutable std::map<CaptureKey, std::shared_ptr<Captured>> captures_;
  mutable RecentlyUsed<CaptureKey> recent_captures_;  // captures_' keys by last use, bounded
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
