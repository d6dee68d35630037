#pragma once
// A progress bar on stderr for searches: silent during the first second (most searches end sooner),
// then redrawn in place at most ten times a second and finished with a newline.
#include <chrono>
#include <cstdio>
#include <string>

namespace autograph::cli {

class ProgressBar {
 public:
  explicit ProgressBar(std::string label) : label_(std::move(label)), start_(Clock::now()) {}
  ~ProgressBar() {
    if (shown_) std::fprintf(stderr, "\n");
  }

  void Update(int done, int total) {
    const auto now = Clock::now();
    if (now - start_ < std::chrono::seconds(1)) return;
    if (shown_ && done < total && now - last_ < std::chrono::milliseconds(100)) return;
    last_ = now;
    shown_ = true;
    constexpr int kWidth = 30;
    const int filled = total > 0 ? kWidth * done / total : kWidth;
    const double seconds = std::chrono::duration<double>(now - start_).count();
    std::fprintf(stderr, "\r%s [%s%s] %d/%d  %.1f s", label_.c_str(), std::string(filled, '#').c_str(),
                 std::string(kWidth - filled, '.').c_str(), done, total, seconds);
    std::fflush(stderr);
  }

 private:
  using Clock = std::chrono::steady_clock;
  std::string label_;
  Clock::time_point start_, last_;
  bool shown_ = false;
};

}  // namespace autograph::cli
