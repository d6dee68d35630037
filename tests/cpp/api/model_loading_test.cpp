// Bad input gets one clear, typed error.
#include "autograph/model_loading.h"

#include <gtest/gtest.h>
#include <torch/script.h>

#include <filesystem>
#include <fstream>

#include "autograph/error.h"
#include "api/inspect.h"
#include "zoo_test_util.h"

namespace {

namespace fs = std::filesystem;

std::string TempFile(const std::string& name, const std::string& content) {
  fs::path p = fs::temp_directory_path() / ("autograph_test_" + name);
  std::ofstream(p) << content;
  return p.string();
}

template <typename E, typename F>
std::string MessageOf(F&& f) {
  try {
    f();
  } catch (const E& e) {
    return e.what();
  }
  ADD_FAILURE() << "expected an exception";
  return "";
}

TEST(LoadModule, MissingFile) {
  auto msg = MessageOf<autograph::ModelLoadError>([] { autograph::LoadModule("/nonexistent/model.pt"); });
  EXPECT_NE(msg.find("no such file"), std::string::npos) << msg;
}

TEST(LoadModule, Directory) {
  auto msg = MessageOf<autograph::ModelLoadError>([] { autograph::LoadModule(fs::temp_directory_path().string()); });
  EXPECT_NE(msg.find("directory"), std::string::npos) << msg;
}

TEST(LoadModule, NotTorchScript) {
  std::string path = TempFile("garbage.pt", "this is not a zip archive");
  auto msg = MessageOf<autograph::ModelLoadError>([&] { autograph::LoadModule(path); });
  EXPECT_NE(msg.find("not a loadable TorchScript file"), std::string::npos) << msg;
  EXPECT_EQ(msg.find('\n'), std::string::npos) << "one line: " << msg;
}

TEST(ParseShape, AcceptsAndRejects) {
  EXPECT_EQ(autograph::ParseShape("1,3,224,224"), (std::vector<int64_t>{1, 3, 224, 224}));
  EXPECT_EQ(autograph::ParseShape("8"), (std::vector<int64_t>{8}));
  EXPECT_THROW(autograph::ParseShape("1,,3"), autograph::InputError);
  EXPECT_THROW(autograph::ParseShape("1,-3"), autograph::InputError);
  EXPECT_THROW(autograph::ParseShape("a,b"), autograph::InputError);
  EXPECT_THROW(autograph::ParseShape(""), autograph::InputError);
  EXPECT_THROW(autograph::ParseDtype("float33"), autograph::InputError);
}

TEST(ReadInputSpecs, MalformedJson) {
  EXPECT_THROW(autograph::ReadInputSpecs(TempFile("bad.json", "{\"inputs\": [{\"shape\": \"x\"}]}")),
               autograph::InputError);
  EXPECT_THROW(autograph::ReadInputSpecs(TempFile("bad2.json", "not json")), autograph::InputError);
  EXPECT_THROW(autograph::ReadInputSpecs("/nonexistent.json"), autograph::InputError);
}

TEST(MakeExampleInputs, IntegersStayInRange) {
  autograph::InputSpec spec{{4, 64}, c10::kLong, 30522};
  auto t = autograph::MakeExampleInputs({spec})[0].toTensor();
  EXPECT_EQ(t.scalar_type(), c10::kLong);
  EXPECT_GE(t.min().item<int64_t>(), 0);
  EXPECT_LT(t.max().item<int64_t>(), 30522);
  EXPECT_TRUE(torch::equal(t, autograph::MakeExampleInputs({spec})[0].toTensor())) << "deterministic";
}

class InspectErrors : public ::testing::Test {
 protected:
  torch::jit::Module module_ = autograph::LoadModule(autograph::testing::ZooModel("squeezenet"));
};

TEST_F(InspectErrors, MissingInput) {
  auto msg = MessageOf<autograph::InputError>([&] { autograph::InspectModule(module_, {}); });
  EXPECT_NE(msg.find("takes 1 input"), std::string::npos) << msg;
}

TEST_F(InspectErrors, WrongShape) {
  auto msg = MessageOf<autograph::InputError>([&] { autograph::InspectModule(module_, {torch::randn({1, 5, 64, 64})}); });
  EXPECT_NE(msg.find("aten::"), std::string::npos) << "names the failing operator: " << msg;
}

TEST_F(InspectErrors, WrongDtype) {
  EXPECT_THROW(autograph::InspectModule(module_, {torch::ones({1, 3, 64, 64}, torch::kLong)}), autograph::InputError);
}

}  // namespace
