#pragma once
// CaptureKeepAlive: what a CUDA Graph captured on this thread must keep alive for as long as it lives.
// A compiled part's loaded container is one: the graph replays the part's kernels on the container's
// memory without calling the part again, so the container may be unloaded (released, the part loaded
// anew on its next call) only once no captured graph holds it. A capture collects over its run; whoever
// runs such an object during it hands it over (Keep), which does nothing outside a capture. Header-only:
// the CUDA backend and the parts' runners are in one library, so they share the thread's collector.
#include <memory>
#include <utility>
#include <vector>

namespace autograph {

class CaptureKeepAlive {
 public:
  using Held = std::vector<std::shared_ptr<const void>>;

  // Collects into `held` on this thread until destroyed (nested: the outer collector again after).
  explicit CaptureKeepAlive(Held* held) : outer_(Current()) { Current() = held; }
  ~CaptureKeepAlive() { Current() = outer_; }
  CaptureKeepAlive(const CaptureKeepAlive&) = delete;
  CaptureKeepAlive& operator=(const CaptureKeepAlive&) = delete;

  static void Keep(std::shared_ptr<const void> object) {
    if (Held* held = Current()) held->push_back(std::move(object));
  }

 private:
  static Held*& Current() {
    static thread_local Held* held = nullptr;
    return held;
  }
  Held* outer_;
};

}  // namespace autograph
