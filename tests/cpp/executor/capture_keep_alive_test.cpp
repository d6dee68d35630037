// CaptureKeepAlive: a capture holds what it replays (a compiled part's container) for the graph's life,
// so that a release drops only the process's reference. Thread-local collectors, nothing CUDA: runs on
// the CPU.
#include <gtest/gtest.h>

#include <memory>
#include <thread>

#include "executor/capture_keep_alive.h"

namespace {

using autograph::CaptureKeepAlive;

TEST(CaptureKeepAlive, OnlyACaptureUnderWayKeepsWhatRunsInIt) {
  auto part = std::make_shared<const int>(7);
  CaptureKeepAlive::Keep(part);  // no capture: nothing holds it
  EXPECT_EQ(part.use_count(), 1);
  CaptureKeepAlive::Held held;
  {
    const CaptureKeepAlive capture(&held);
    CaptureKeepAlive::Keep(part);
    std::thread([&part] { CaptureKeepAlive::Keep(part); }).join();  // another thread's run is not this capture's
  }
  CaptureKeepAlive::Keep(part);  // after it: nothing
  ASSERT_EQ(held.size(), 1u);
  std::weak_ptr<const int> weak = part;
  part.reset();  // released by the process: the graph still holds it
  EXPECT_FALSE(weak.expired());
  held.clear();  // the graph goes
  EXPECT_TRUE(weak.expired());
}

TEST(CaptureKeepAlive, ANestedCollectorGivesTheOuterOneBack) {
  auto a = std::make_shared<const int>(1), b = std::make_shared<const int>(2);
  CaptureKeepAlive::Held outer, inner;
  {
    const CaptureKeepAlive first(&outer);
    {
      const CaptureKeepAlive second(&inner);
      CaptureKeepAlive::Keep(a);
    }
    CaptureKeepAlive::Keep(b);
  }
  ASSERT_EQ(inner.size(), 1u);
  ASSERT_EQ(outer.size(), 1u);
  EXPECT_EQ(inner[0], a);
  EXPECT_EQ(outer[0], b);
}

}  // namespace
