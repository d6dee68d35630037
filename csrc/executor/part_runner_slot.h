#pragma once
// Where a compiler's library installs the runner of its compiled parts (OpenVINO's, ONNX Runtime's: see
// openvino_part.h, onnxruntime_part.h): the runtime declares their operators and never links a compiler,
// so a program holding such a part loads without it and says what to load when it runs.
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace autograph {

// `Runner` has `run`, `loaded` and `release` (std::function members). Held by shared_ptr so that a call
// copies a pointer, not the three functions, and a runner installed again leaves running calls alone.
template <typename Runner>
class PartRunnerSlot {
 public:
  void Install(Runner runner) {
    auto installed = std::make_shared<const Runner>(std::move(runner));
    std::lock_guard<std::mutex> lock(mutex_);
    runner_ = std::move(installed);
  }

  // The runner, or null where none is installed (or it cannot run parts).
  std::shared_ptr<const Runner> Get() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return runner_ && runner_->run ? runner_ : nullptr;
  }

  // The digests of the parts the runner has compiled now; none where no runner is installed.
  std::vector<std::string> Loaded() const {
    std::shared_ptr<const Runner> runner;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      runner = runner_;
    }
    return runner && runner->loaded ? runner->loaded() : std::vector<std::string>{};
  }

  // How many of these digests' compiled parts the runner dropped (0 where no runner is installed).
  int64_t Release(const std::vector<std::string>& digests) const {
    std::shared_ptr<const Runner> runner;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      runner = runner_;
    }
    return runner && runner->release ? runner->release(digests) : 0;
  }

 private:
  mutable std::mutex mutex_;
  std::shared_ptr<const Runner> runner_;
};

}  // namespace autograph
