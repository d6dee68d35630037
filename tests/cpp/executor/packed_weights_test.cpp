// PackedWeights: a packed call's tensors unpacked into the program's inputs, views made once per packed
// tensor, and packings or packed tensors that do not fit refused.
#include <gtest/gtest.h>

#include <ATen/ATen.h>

#include <nlohmann/json.hpp>

#include "autograph/error.h"
#include "executor/packed_weights.h"

namespace {

using autograph::PackedWeights;
using nlohmann::json;

// Inputs 0 and 2 packed (a 2x3 weight and its transpose's strides, a 4-vector), 1 and 3 passed as they are.
const json kPacking = {{"groups", {{{"dtype", "Float"}, {"members", {{0, 0, {2, 3}, {3, 1}}, {2, 16, {4}, {1}}}}}}}};

TEST(PackedWeights, UnpacksViewsAtTheirPlacesAndTheLooseTensorsBetween) {
  auto packed = PackedWeights::FromJson(kPacking, {true, true, true, false});
  ASSERT_EQ(packed->num_passed(), 3u);  // the packed tensor, input 1, input 3
  at::Tensor buffer = at::arange(20, at::kFloat), loose = at::ones({5}), user = at::zeros({7});
  std::vector<at::Tensor> inputs = packed->Unpacked({buffer, loose, user});
  ASSERT_EQ(inputs.size(), 4u);
  EXPECT_TRUE(at::equal(inputs[0], at::arange(6, at::kFloat).view({2, 3})));
  EXPECT_TRUE(at::equal(inputs[2], at::arange(16, 20, at::kFloat)));
  EXPECT_TRUE(inputs[1].is_same(loose));
  EXPECT_TRUE(inputs[3].is_same(user));
  // The same buffer again: the same views (made once); written in place, seen through them.
  std::vector<at::Tensor> again = packed->Unpacked({buffer, loose, user});
  EXPECT_TRUE(again[0].is_same(inputs[0]));
  buffer.mul_(2);
  EXPECT_EQ(again[2][0].item<float>(), 32.0f);
  // Another buffer: views of it.
  at::Tensor other = at::zeros({20});
  EXPECT_EQ(packed->Unpacked({other, loose, user})[0].data_ptr(), other.data_ptr());
}

TEST(PackedWeights, RefusesPackedTensorsThatDoNotFit) {
  auto packed = PackedWeights::FromJson(kPacking, {true, true, true, false});
  at::Tensor loose = at::ones({5}), user = at::zeros({7});
  EXPECT_THROW(packed->Unpacked({at::zeros({20}, at::kDouble), loose, user}), autograph::InputError);
  EXPECT_THROW(packed->Unpacked({at::zeros({19}), loose, user}), autograph::InputError);  // the 4-vector ends at 20
  EXPECT_THROW(packed->Unpacked({at::zeros({4, 5}), loose, user}), autograph::InputError);
}

TEST(PackedWeights, RefusesAPackingOfAUsersInputARepeatOrALoneMember) {
  EXPECT_THROW(PackedWeights::FromJson(kPacking, {true, true, false, false}), autograph::Error);  // input 2 is the user's
  json twice = kPacking;
  twice["groups"][0]["members"][1][0] = 0;
  EXPECT_THROW(PackedWeights::FromJson(twice, {true, true, true, false}), autograph::Error);
  json lone = kPacking;
  lone["groups"][0]["members"].erase(1);
  EXPECT_THROW(PackedWeights::FromJson(lone, {true, true, true, false}), autograph::Error);
  json unknown = kPacking;
  unknown["groups"][0]["dtype"] = "Quaternion";
  EXPECT_THROW(PackedWeights::FromJson(unknown, {true, true, true, false}), autograph::Error);
}

}  // namespace
