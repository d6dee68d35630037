// CPU backend: the groups of a stage run concurrently, group 0 on the calling thread and the others
// on a thread pool owned by the backend; the caller waits for the whole stage before the next. A
// Merge stage is one group: its merged kernel runs on the calling thread. The groups of a stage
// share the caller's intra-op threads: each runs its operators with its share (OpenMP's thread
// count is per thread), instead of every group asking for all cores.
#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <ATen/ThreadLocalState.h>
#include <ATen/record_function.h>
#include <c10/core/thread_pool.h>

#include <condition_variable>
#include <algorithm>
#include <exception>
#include <mutex>

#include "executor/stage_executor.h"

#ifdef AUTOGRAPH_WITH_OPENMP
extern "C" {
// libgomp, the OpenMP runtime of ATen's parallel backend: the thread count of parallel regions that
// the calling thread starts.
void omp_set_num_threads(int);
int omp_get_max_threads();
}
#endif

namespace autograph {

namespace {

// Runs the rest of the scope with `threads` intra-op threads on this thread; restores the count.
class IntraOpThreadsGuard {
 public:
  explicit IntraOpThreadsGuard(int threads) {
#ifdef AUTOGRAPH_WITH_OPENMP
    previous_ = omp_get_max_threads();
    if (threads != previous_) omp_set_num_threads(threads);
#endif
  }
  ~IntraOpThreadsGuard() {
#ifdef AUTOGRAPH_WITH_OPENMP
    if (omp_get_max_threads() != previous_) omp_set_num_threads(previous_);
#endif
  }
  IntraOpThreadsGuard(const IntraOpThreadsGuard&) = delete;
  IntraOpThreadsGuard& operator=(const IntraOpThreadsGuard&) = delete;

 private:
  int previous_ = 0;
};

// Group g's share of `threads` among `groups` (the first ones take the remainder), at least one.
int ThreadShare(int threads, int groups, int g) {
  return std::max(1, threads / groups + (g < threads % groups ? 1 : 0));
}

class StageLatch {
 public:
  explicit StageLatch(int count) : count_(count) {}
  void Done(std::exception_ptr error) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (error && !error_) error_ = error;
    if (--count_ == 0) cv_.notify_all();
  }
  void Wait() {
    std::unique_lock<std::mutex> lock(mutex_);
    cv_.wait(lock, [this] { return count_ == 0; });
  }
  std::exception_ptr error() const { return error_; }

 private:
  std::mutex mutex_;
  std::condition_variable cv_;
  int count_;
  std::exception_ptr error_;
};

class CpuStageBackend : public StageBackend {
 public:
  explicit CpuStageBackend(std::shared_ptr<const StagePlan> plan) : plan_(std::move(plan)) {
    // ATen sets a thread's count to the process's on its first parallel call (a lazy per-thread
    // init, one in libtorch and one inlined here): do both when a pool thread starts, so that they
    // cannot undo a share later.
    if (plan_->num_streams > 1)
      pool_ = std::make_unique<c10::ThreadPool>(plan_->num_streams - 1, -1, [] {
        at::get_num_threads();
        at::internal::lazy_init_num_threads();
      });
  }

  std::vector<c10::IValue> Run(std::vector<c10::IValue> inputs) const override {
    const StagePlan& plan = *plan_;
    CompiledGraph::Table table = plan.compiled.NewTable(std::move(inputs));
    torch::jit::Stack stack;
    const at::ThreadLocalState caller_state;  // grad mode, inference mode, ... follow the work
    for (size_t s = 0; s < plan.stages.size(); ++s) {
      const auto& groups = plan.stages[s];
      if (groups.size() == 1) {
        RunGroup(groups[0], table, stack, s, 0);
      } else {
        const int threads = at::get_num_threads(), n = static_cast<int>(groups.size());
        StageLatch latch(n - 1);
        for (size_t g = 1; g < groups.size(); ++g) {
          pool_->run([this, &groups, s, g, &table, &latch, &caller_state, share = ThreadShare(threads, n, g)] {
            std::exception_ptr error;
            try {
              at::ThreadLocalStateGuard state_guard(caller_state);
              IntraOpThreadsGuard threads_guard(share);
              torch::jit::Stack own_stack;
              RunGroup(groups[g], table, own_stack, s, g);
            } catch (...) {
              error = std::current_exception();
            }
            latch.Done(error);
          });
        }
        std::exception_ptr error;
        try {
          IntraOpThreadsGuard threads_guard(ThreadShare(threads, n, 0));
          RunGroup(groups[0], table, stack, s, 0);
        } catch (...) {
          error = std::current_exception();
        }
        latch.Wait();  // always: the pool threads hold references into `table`
        if (error) std::rethrow_exception(error);
        if (latch.error()) std::rethrow_exception(latch.error());
      }
      for (int slot : plan.release.after_phase[s]) table[slot] = c10::IValue();
    }
    return plan.compiled.Outputs(table);
  }

 private:
  void RunGroup(const StagePlan::GroupSteps& group, CompiledGraph::Table& table, torch::jit::Stack& stack, size_t stage,
                size_t index) const {
    // Under PyTorch's profiler (autograph optimize --trace, torch.profiler) each group is one labelled
    // range on its thread, around the ATen operators it runs; the label is built only then.
    RECORD_USER_SCOPE("autograph stage " + std::to_string(stage) + " group " + std::to_string(index));
    for (size_t i = group.begin; i < group.end;) {
      const size_t next = plan_->Run(i, table, stack);  // one node, or a Merge stage's merged kernel
      for (; i < next; ++i)
        for (int slot : plan_->release.after_step[i]) table[slot] = c10::IValue();
    }
  }

  std::shared_ptr<const StagePlan> plan_;
  std::unique_ptr<c10::ThreadPool> pool_;
};

}  // namespace

std::unique_ptr<StageBackend> MakeCpuStageBackend(std::shared_ptr<const StagePlan> plan) {
  return std::make_unique<CpuStageBackend>(std::move(plan));
}

}  // namespace autograph
