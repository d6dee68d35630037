// Calibration inputs unlike the example inputs are one InputError naming the call, the argument and
// where inside it they differ; inputs like them (other values, the same structure) pass.
#include "api/calibration_inputs.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "autograph/error.h"

namespace {

using autograph::CheckCalibrationInputs;
using autograph::InputError;
using Calls = std::vector<std::vector<c10::IValue>>;

// forward(x, (mask, [a, b]), {"scale": s}, flag): a tensor, a tuple holding a list, a dict, a plain value.
std::vector<c10::IValue> Arguments(const at::Tensor& x, const at::Tensor& b, int64_t flag = 1) {
  c10::Dict<std::string, at::Tensor> named;
  named.insert("scale", torch::ones({1}));
  return {x,
          c10::ivalue::Tuple::create({torch::zeros({2, 4}, torch::kBool), c10::List<at::Tensor>({torch::ones(3), b})}),
          named, flag};
}

std::string MessageOf(const Calls& calls, const std::vector<c10::IValue>& example) {
  try {
    CheckCalibrationInputs(calls, example, "optimize");
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

TEST(CheckCalibrationInputs, InputsOfTheExamplesStructureDtypesAndShapesPass) {
  const auto example = Arguments(torch::randn({2, 4}), torch::ones(3));
  EXPECT_NO_THROW(CheckCalibrationInputs({}, example, "optimize"));
  EXPECT_NO_THROW(CheckCalibrationInputs({Arguments(torch::randn({2, 4}), torch::randn(3), 7)}, example, "optimize"));
}

TEST(CheckCalibrationInputs, EachDifferenceIsAnInputErrorThatSaysWhere) {
  const auto example = Arguments(torch::randn({2, 4}), torch::ones(3));
  EXPECT_EQ(MessageOf({{torch::randn({2, 4})}}, example),
            "optimize: calibration input 0 has 1 arguments; the example inputs have 4");
  EXPECT_EQ(MessageOf({example, Arguments(torch::randn({2, 5}), torch::ones(3))}, example),
            "optimize: calibration input 1, argument 0: Float [2, 5]; the example's is Float [2, 4] (calibration "
            "inputs take the example's structure, dtypes and shapes)");
  EXPECT_NE(MessageOf({Arguments(torch::randn({2, 4}), torch::ones(3, torch::kDouble))}, example)
                .find("argument 1 at [1][1]: Double [3]; the example's is Float [3]"),
            std::string::npos);
  auto other_structure = example;
  other_structure[1] = c10::ivalue::Tuple::create({torch::zeros({2, 4}, torch::kBool)});
  EXPECT_NE(MessageOf({other_structure}, example).find("argument 1: a Tuple of 1; the example's is a Tuple of 2"),
            std::string::npos);
  auto other_key = example;
  c10::Dict<std::string, at::Tensor> renamed;
  renamed.insert("shift", torch::ones({1}));
  other_key[2] = renamed;
  EXPECT_NE(MessageOf({other_key}, example).find("argument 2: a dict whose key 0 is 'shift'; the example's is 'scale'"),
            std::string::npos);
  auto other_kind = example;
  other_kind[3] = 0.5;
  EXPECT_NE(MessageOf({other_kind}, example).find("argument 3: Double; the example's is Int"), std::string::npos);
}

}  // namespace
