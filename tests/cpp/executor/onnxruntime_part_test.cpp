// ONNX Runtime's runner slot (executor/onnxruntime_part.h) and the one list of compiled-part operators
// (executor/compiled_part_ops.h). This binary does not load libautograph_onnxruntime.so: a real part
// needs ONNX Runtime (the Python tests run one); here the operator without its runner, and a stand-in
// runner seen through autograph::loaded_compiled_parts and autograph::release_compiled_parts.
#include <gtest/gtest.h>

#include <ATen/ATen.h>
#include <ATen/core/dispatch/Dispatcher.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "autograph/error.h"
#include "executor/compiled_part_ops.h"
#include "executor/onnxruntime_part.h"

namespace {

using Digests = std::vector<std::string>;

bool Lists(const Digests& digests, const std::string& digest) {
  return std::find(digests.begin(), digests.end(), digest) != digests.end();
}

Digests LoadedOp() {
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

std::vector<at::Tensor> RunOp(const std::vector<at::Tensor>& inputs, const at::Tensor& package, const std::string& spec) {
  static auto op = c10::Dispatcher::singleton()
                       .findSchemaOrThrow("autograph::run_onnxruntime_part", "")
                       .typed<std::vector<at::Tensor>(const std::vector<at::Tensor>&, const at::Tensor&, c10::string_view)>();
  return op.call(inputs, package, spec);
}

TEST(CompiledPartOps, NamesEachCompilersOperatorAndNothingElse) {
  EXPECT_TRUE(autograph::IsCompiledPartOp("autograph::run_inductor_part"));
  EXPECT_TRUE(autograph::IsCompiledPartOp("autograph::run_openvino_part"));
  EXPECT_TRUE(autograph::IsCompiledPartOp("autograph::run_onnxruntime_part"));
  EXPECT_TRUE(autograph::IsCompiledPartOp(autograph::kOnnxRuntimePartOp));
  for (const char* op : {"", "autograph::execute", "aten::convolution", "autograph::run_onnxruntime_par",
                         "autograph::run_onnxruntime_part2", "run_onnxruntime_part"})
    EXPECT_FALSE(autograph::IsCompiledPartOp(op)) << op;
  // Each is an operator the runtime declares, with the same arguments.
  for (std::string_view name : autograph::kCompiledPartOps) {
    const auto op = c10::Dispatcher::singleton().findSchema({std::string(name), ""});
    ASSERT_TRUE(op.has_value()) << name;
    const c10::FunctionSchema& schema = op->schema();
    ASSERT_EQ(schema.arguments().size(), 3u) << name;
    EXPECT_EQ(schema.arguments()[1].name(), "package");
    EXPECT_EQ(schema.arguments()[2].name(), "spec");
  }
}

TEST(OnnxRuntimePart, WithoutItsRunnerTheOperatorSaysWhatToLoad) {
  autograph::SetOnnxRuntimePartRunner({});
  EXPECT_TRUE(autograph::LoadedOnnxRuntimeParts().empty());
  EXPECT_EQ(autograph::ReleaseOnnxRuntimeParts({"ort-a"}), 0);
  const at::Tensor package = at::empty({0}, at::kByte);
  try {
    autograph::RunOnnxRuntimePart({}, package, "{}");
    FAIL() << "ran without a runner";
  } catch (const autograph::Error& e) {
    const std::string message = e.what();
    for (const char* names : {"libautograph_onnxruntime.so", "pip install onnxruntime", "onnxruntime=False"})
      EXPECT_NE(message.find(names), std::string::npos) << message;
  }
  // Through the dispatcher: a torch error (RuntimeError in Python) with the same message.
  try {
    RunOp({at::ones({2})}, package, "{}");
    FAIL() << "ran without a runner";
  } catch (const c10::Error& e) {
    EXPECT_NE(std::string(e.what()).find("libautograph_onnxruntime.so"), std::string::npos) << e.what();
  }
}

// A stand-in for libautograph_onnxruntime.so's runner that holds `loaded`; removed after.
class OnnxRuntimeStandIn : public ::testing::Test {
 protected:
  void SetUp() override {
    autograph::SetOnnxRuntimePartRunner({
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
  void TearDown() override { autograph::SetOnnxRuntimePartRunner({}); }

  Digests loaded = {"ort-a", "ort-b"};
};

TEST_F(OnnxRuntimeStandIn, TheCompiledPartsOperatorsListAndReleaseItsParts) {
  const Digests listed = LoadedOp();
  EXPECT_TRUE(Lists(listed, "ort-a") && Lists(listed, "ort-b"));
  EXPECT_EQ(ReleaseOp({"ort-a", "unknown"}), 1);
  EXPECT_FALSE(Lists(LoadedOp(), "ort-a"));
  EXPECT_TRUE(Lists(LoadedOp(), "ort-b"));
  EXPECT_EQ(ReleaseOp({"ort-a"}), 0);  // released already
  const at::Tensor x = at::ones({2});
  EXPECT_TRUE(RunOp({x}, at::empty({0}, at::kByte), "{}")[0].equal(x));
}

}  // namespace
