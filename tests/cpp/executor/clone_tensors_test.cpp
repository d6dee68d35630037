// CloneTensors: what a CUDA Graph replay returns is copied out of the graph's buffers whatever
// structure holds it; checked here on CPU tensors (the structure walk is device-independent).
#include "executor/clone_tensors.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

namespace {

bool SharesMemory(const at::Tensor& a, const at::Tensor& b) { return a.data_ptr() == b.data_ptr(); }

TEST(CloneTensors, CopiesTensorsInsideTuplesListsAndDicts) {
  const at::Tensor a = torch::randn({3}), b = torch::randn({2, 2}), c = torch::randn({4});
  c10::Dict<std::string, at::Tensor> dict;
  dict.insert("c", c);
  c10::List<at::Tensor> list({b});
  c10::impl::GenericList generic(c10::AnyType::get());
  generic.push_back(c10::IValue(7));
  generic.push_back(c10::IValue(c));
  const c10::IValue value = c10::ivalue::Tuple::create({a, c10::ivalue::Tuple::create({list, dict}), generic, 2.5,
                                                        c10::IValue()});

  const c10::IValue copy = autograph::CloneTensors(value);
  ASSERT_TRUE(copy.isTuple());
  const auto& top = copy.toTupleRef().elements();
  ASSERT_EQ(top.size(), 5u);
  EXPECT_TRUE(torch::equal(top[0].toTensor(), a));
  EXPECT_FALSE(SharesMemory(top[0].toTensor(), a));
  const auto& inner = top[1].toTupleRef().elements();
  ASSERT_TRUE(inner[0].isTensorList());
  EXPECT_TRUE(torch::equal(inner[0].toTensorList().get(0), b));
  EXPECT_FALSE(SharesMemory(inner[0].toTensorList().get(0), b));
  const auto copied_dict = inner[1].toGenericDict();
  EXPECT_EQ(*copied_dict.keyType(), *c10::StringType::get());
  EXPECT_FALSE(SharesMemory(copied_dict.at("c").toTensor(), c));
  EXPECT_TRUE(torch::equal(copied_dict.at("c").toTensor(), c));
  const auto copied_generic = top[2].toList();
  EXPECT_EQ(copied_generic.get(0).toInt(), 7);
  EXPECT_FALSE(SharesMemory(copied_generic.get(1).toTensor(), c));
  EXPECT_EQ(top[3].toDouble(), 2.5);
  EXPECT_TRUE(top[4].isNone());

  // The original is untouched: writing the copy leaves it as it was.
  top[0].toTensor().fill_(0);
  EXPECT_FALSE(torch::equal(top[0].toTensor(), a));
}

TEST(CloneTensors, KeepsNamedTupleTypes) {
  const std::vector<std::string> fields = {"first", "second"};
  const std::vector<c10::TypePtr> types = {c10::TensorType::get(), c10::IntType::get()};
  auto type = c10::TupleType::createNamed(c10::QualifiedName("autograph_test.Pair"), fields, types);
  const c10::IValue value = c10::ivalue::Tuple::createNamed({torch::ones({2}), 3}, type);
  const c10::IValue copy = autograph::CloneTensors(value);
  EXPECT_EQ(*copy.toTuple()->type(), *type);
  EXPECT_FALSE(SharesMemory(copy.toTupleRef().elements()[0].toTensor(), value.toTupleRef().elements()[0].toTensor()));
}

}  // namespace
