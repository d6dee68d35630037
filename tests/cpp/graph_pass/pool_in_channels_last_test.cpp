// PoolInChannelsLast: 2-d max / avg pools on 4-d NCHW inputs run on a channels-last copy and give
// back an NCHW tensor with the same bits; other pools stay as they are.
#include "graph_pass/pool_in_channels_last.h"

#include <gtest/gtest.h>
#include <torch/csrc/jit/testing/file_check.h>
#include <torch/torch.h>

#include "graph_test_util.h"

namespace {

using torch::jit::testing::FileCheck;

const char* kPools = R"IR(
graph(%x : Tensor):
  %one : int = prim::Constant[value=1]()
  %two : int = prim::Constant[value=2]()
  %three : int = prim::Constant[value=3]()
  %zero : int = prim::Constant[value=0]()
  %true : bool = prim::Constant[value=1]()
  %false : bool = prim::Constant[value=0]()
  %none : NoneType = prim::Constant()
  %k : int[] = prim::ListConstruct(%three, %three)
  %s : int[] = prim::ListConstruct(%two, %two)
  %p : int[] = prim::ListConstruct(%zero, %zero)
  %d : int[] = prim::ListConstruct(%one, %one)
  %m : Tensor = aten::max_pool2d(%x, %k, %s, %p, %d, %true)
  %a : Tensor = aten::avg_pool2d(%m, %k, %s, %d, %false, %true, %none)
  %r : Tensor = aten::relu(%a)
  return (%r, %m))IR";

TEST(PoolInChannelsLast, NchwPoolsRunChannelsLastWithTheSameBits) {
  auto graph = GraphWithConstants(kPools, {});
  auto original = graph->copy();
  const at::Tensor x = torch::randn({1, 16, 23, 23});
  EXPECT_EQ(autograph::PoolInChannelsLast(graph, {x}), 2);
  graph->lint();
  FileCheck()
      .check("aten::contiguous")
      ->check("aten::max_pool2d")
      ->check("aten::contiguous")
      ->check("aten::contiguous")
      ->check("aten::avg_pool2d")
      ->check("aten::contiguous")
      ->check("aten::relu")
      ->run(*graph);
  const auto want = RunGraph(original, {x});
  const auto got = RunGraph(graph, {x});
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_TRUE(got[i].is_contiguous()) << "output " << i << " comes back NCHW";
    EXPECT_TRUE(torch::equal(got[i], want[i])) << "output " << i;
  }
  EXPECT_EQ(autograph::PoolInChannelsLast(graph, {x}), 0) << "already channels-last: nothing more to do";
}

TEST(PoolInChannelsLast, UnbatchedAndOneDnnInputsStay) {
  auto graph = GraphWithConstants(kPools, {});
  EXPECT_EQ(autograph::PoolInChannelsLast(graph, {torch::randn({16, 23, 23})}), 0);  // 3-d: no channels-last
  FileCheck().check_not("aten::contiguous")->run(*graph);
  auto mkldnn = GraphWithConstants(R"IR(
graph(%x : Tensor):
  %one : int = prim::Constant[value=1]()
  %two : int = prim::Constant[value=2]()
  %zero : int = prim::Constant[value=0]()
  %false : bool = prim::Constant[value=0]()
  %none : NoneType = prim::Constant()
  %k : int[] = prim::ListConstruct(%two, %two)
  %p : int[] = prim::ListConstruct(%zero, %zero)
  %d : int[] = prim::ListConstruct(%one, %one)
  %y : Tensor = aten::to_mkldnn(%x, %none)
  %m : Tensor = aten::max_pool2d(%y, %k, %k, %p, %d, %false)
  %o : Tensor = aten::to_dense(%m, %none, %none)
  return (%o))IR",
                                   {});
  EXPECT_EQ(autograph::PoolInChannelsLast(mkldnn, {torch::randn({1, 8, 8, 8})}), 0);  // oneDNN's own pooling
}

}  // namespace
