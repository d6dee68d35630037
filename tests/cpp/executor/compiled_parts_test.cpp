// Listing and releasing compiled parts (executor/inductor_part.h, executor/openvino_part.h) and the
// operators autograph::loaded_compiled_parts and autograph::release_compiled_parts. A real package
// needs a compiler (the Python tests, tests/python/test_compiled_part_release.py, load and release
// them); here: unknown digests, a package that fails to load, and the OpenVINO slot with a stand-in
// runner, since this binary does not load libautograph_openvino.so.
#include <gtest/gtest.h>

#include <ATen/ATen.h>
#include <ATen/core/dispatch/Dispatcher.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "autograph/error.h"
#include "executor/inductor_part.h"
#include "executor/openvino_part.h"

namespace {

using Digests = std::vector<std::string>;

bool Lists(const Digests& digests, const std::string& digest) {
  return std::find(digests.begin(), digests.end(), digest) != digests.end();
}

std::vector<std::string> LoadedOp() {
  static auto op = c10::Dispatcher::singleton()
                       .findSchemaOrThrow("autograph::loaded_compiled_parts", "")
                       .typed<std::vector<std::string>()>();
  return op.call();
}

int64_t ReleaseOp(const Digests& digests) {
  static auto op = c10::Dispatcher::singleton()
                       .findSchemaOrThrow("autograph::release_compiled_parts", "")
                       .typed<int64_t(std::vector<std::string>)>();
  return op.call(digests);
}

// Installs a stand-in for libautograph_openvino.so's runner that holds `loaded`, and removes it after.
class OpenVinoStandIn : public ::testing::Test {
 protected:
  void SetUp() override {
    autograph::SetOpenVinoPartRunner({
        [](const std::vector<at::Tensor>& inputs, const at::Tensor&, std::string_view) { return inputs; },
        [this] { return loaded; },
        [this](const Digests& digests) {
          int64_t released = 0;
          for (const std::string& digest : digests) {
            auto it = std::find(loaded.begin(), loaded.end(), digest);
            if (it != loaded.end()) {
              loaded.erase(it);
              ++released;
            }
          }
          return released;
        },
    });
  }
  void TearDown() override { autograph::SetOpenVinoPartRunner({}); }

  Digests loaded = {"ov-a", "ov-b"};
};

TEST(CompiledParts, ReleasingUnknownDigestsReleasesNothing) {
  EXPECT_EQ(autograph::ReleaseInductorParts({"not a digest", std::string(64, '0')}), 0);
  EXPECT_EQ(autograph::ReleaseInductorParts({}), 0);
  EXPECT_EQ(ReleaseOp({"not a digest"}), 0);
  EXPECT_FALSE(Lists(LoadedOp(), "not a digest"));
}

TEST(CompiledParts, APackageThatFailsToLoadIsNotListed) {
  const std::string digest(64, 'd');
  const std::string spec = R"({"format": "autograph-inductor-part", "digest": ")" + digest +
                           R"(", "device": "cpu", "outputs": []})";
  const at::Tensor garbage = at::full({64}, 7, at::kByte);
  EXPECT_THROW(autograph::RunInductorPart({}, garbage, spec), autograph::Error);
  EXPECT_FALSE(Lists(autograph::LoadedInductorParts(), digest));
  EXPECT_EQ(autograph::ReleaseInductorParts({digest}), 0);
  // Still a clear error on the next call, not a lookup of a half-made entry.
  EXPECT_THROW(autograph::RunInductorPart({}, garbage, spec), autograph::Error);
}

TEST(CompiledParts, WithoutOpenVinoRunnerNothingIsListedOrReleased) {
  autograph::SetOpenVinoPartRunner({});
  EXPECT_TRUE(autograph::LoadedOpenVinoParts().empty());
  EXPECT_EQ(autograph::ReleaseOpenVinoParts({"ov-a"}), 0);
  EXPECT_THROW(autograph::RunOpenVinoPart({}, at::empty({0}, at::kByte), "{}"), autograph::Error);
}

TEST_F(OpenVinoStandIn, TheOperatorsListAndReleaseThroughTheInstalledRunner) {
  EXPECT_EQ(autograph::LoadedOpenVinoParts(), (Digests{"ov-a", "ov-b"}));
  const Digests listed = LoadedOp();
  EXPECT_TRUE(Lists(listed, "ov-a") && Lists(listed, "ov-b"));
  EXPECT_EQ(ReleaseOp({"ov-a", "unknown"}), 1);
  EXPECT_FALSE(Lists(LoadedOp(), "ov-a"));
  EXPECT_TRUE(Lists(LoadedOp(), "ov-b"));
  EXPECT_EQ(ReleaseOp({"ov-a"}), 0);  // released already
  // The runner still runs parts beside listing and releasing.
  const at::Tensor x = at::ones({2});
  EXPECT_TRUE(autograph::RunOpenVinoPart({x}, at::empty({0}, at::kByte), "{}")[0].equal(x));
}

}  // namespace
