// FuseScaledDotProductAttention: attention written out op by op becomes one
// aten::scaled_dot_product_attention with the same outputs; what does not fit the fused op (other
// readers of the scores, another softmax dim, 3-D operands, a scaled mask) stays as it was.
#include "graph_pass/fuse_attention.h"

#include <gtest/gtest.h>
#include <torch/csrc/jit/testing/file_check.h>
#include <torch/torch.h>

#include <string>
#include <vector>

#include "graph_pass/import_op_graph.h"
#include "graph_test_util.h"

namespace {

using torch::jit::testing::FileCheck;

// The fused kernel sums the same products in another order (blocked, online softmax): float32
// rounding of 16-term dot products and 7-term softmax sums of O(1) values, far below 1e-5.
void ExpectSameOutputs(const std::vector<at::Tensor>& want, const std::vector<at::Tensor>& got) {
  ASSERT_EQ(want.size(), got.size());
  for (size_t i = 0; i < want.size(); ++i) {
    ASSERT_EQ(want[i].sizes(), got[i].sizes()) << "output " << i;
    EXPECT_TRUE(torch::allclose(want[i], got[i], 1e-5, 1e-5))
        << "output " << i << " differs by " << (want[i] - got[i]).abs().max().item<float>();
  }
}

// BERT's self-attention: heads split with view + permute from one input, scores divided by a
// constant, an additive mask, softmax, and the heads merged back with permute + reshape.
std::string AttentionIR(const std::string& scores, const std::string& tail) {
  return R"IR(
graph(%x : Tensor, %mask : Tensor, %c : Tensor):
  %m1 : int = prim::Constant[value=-1]()
  %m2 : int = prim::Constant[value=-2]()
  %one : int = prim::Constant[value=1]()
  %two : int = prim::Constant[value=2]()
  %eight : float = prim::Constant[value=8.]()
  %quarter : float = prim::Constant[value=0.25]()
  %none : NoneType = prim::Constant()
  %b : int = aten::size(%x, %one)
  %shape : int[] = prim::ListConstruct(%two, %b, %two, %m1)
  %order : int[] = prim::ListConstruct(%two, %one, %m1, %m2)
  %xq : Tensor = aten::mul(%x, %two)
  %xk : Tensor = aten::mul(%x, %quarter)
  %qv : Tensor = aten::view(%xq, %shape)
  %kv : Tensor = aten::view(%xk, %shape)
  %vv : Tensor = aten::view(%x, %shape)
  %p0 : int = prim::Constant[value=0]()
  %p2 : int = prim::Constant[value=2]()
  %p1 : int = prim::Constant[value=1]()
  %p3 : int = prim::Constant[value=3]()
  %perm : int[] = prim::ListConstruct(%p0, %p2, %p1, %p3)
  %q : Tensor = aten::permute(%qv, %perm)
  %k : Tensor = aten::permute(%kv, %perm)
  %v : Tensor = aten::permute(%vv, %perm)
  %kt : Tensor = aten::transpose(%k, %m1, %m2)
  %a : Tensor = aten::matmul(%q, %kt)
)IR" + scores + R"IR(
  %o : Tensor = aten::matmul(%p, %v)
  %ctx : Tensor = aten::permute(%o, %perm)
  %flat : int[] = prim::ListConstruct(%two, %b, %m1)
  %r : Tensor = aten::reshape(%ctx, %flat)
)IR" + tail;
}

// x [2, 7, 16]: two heads of 8, seven positions; mask [2, 1, 1, 7] as BERT extends it.
std::vector<at::Tensor> Inputs(int64_t heads_dim = 16) {
  at::Tensor mask = torch::zeros({2, 1, 1, 7});
  mask.index_put_({0, 0, 0, 6}, -10000.0);
  return {torch::randn({2, 7, heads_dim}), mask};
}

// The IR with %c a 0-dim tensor constant (0.25), as tracing leaves scalars.
std::shared_ptr<torch::jit::Graph> Attention(const std::string& scores, const std::string& tail) {
  return GraphWithConstants(AttentionIR(scores, tail), {{"c", torch::tensor(0.25)}});
}

int Fuse(std::shared_ptr<torch::jit::Graph>& graph, const std::vector<at::Tensor>& inputs) {
  return autograph::FuseScaledDotProductAttention(graph, std::vector<c10::IValue>(inputs.begin(), inputs.end()));
}

TEST(FuseScaledDotProductAttention, BertAttentionBecomesOneFusedOp) {
  torch::manual_seed(0);
  auto graph = Attention(R"IR(
  %s : Tensor = aten::div(%a, %eight)
  %sm : Tensor = aten::add(%s, %mask, %one)
  %p : Tensor = aten::softmax(%sm, %m1, %none))IR",
                         "  return (%r)");
  const auto inputs = Inputs();
  const auto want = RunGraph(graph, inputs);
  EXPECT_EQ(Fuse(graph, inputs), 1);
  graph->lint();
  FileCheck()
      .check("aten::scaled_dot_product_attention")
      ->check_not("aten::softmax")
      ->check_not("aten::matmul")
      ->check_not("aten::div")
      ->run(*graph);
  ExpectSameOutputs(want, RunGraph(graph, inputs));
  // Heads merged back: with the fused op's layout the reshape is a view, no copy kernel.
  const autograph::OpGraph ops = autograph::ImportOpGraph(graph, std::vector<c10::IValue>(inputs.begin(), inputs.end()));
  for (const auto& n : ops.nodes())
    if (n.op == "aten::reshape") EXPECT_EQ(n.kind, autograph::OpKind::View) << "the reshape copies";
  EXPECT_EQ(Fuse(graph, inputs), 0);  // nothing left
}

TEST(FuseScaledDotProductAttention, ScaleByMultiplyEitherSideOrNoneAtAll) {
  torch::manual_seed(1);
  // mul(scores, c) and mul(c, scores) (a 0-dim tensor constant) scale by c; no scaling at all must scale by exactly 1, not
  // by the fused op's default 1/sqrt(E).
  for (const std::string scores : {"  %p : Tensor = aten::softmax(%s, %m1, %none)\n  %s : Tensor = aten::mul(%a, %quarter)",
                                   "  %p : Tensor = aten::softmax(%s, %m1, %none)\n  %s : Tensor = aten::mul(%c, %a)",
                                   "  %p : Tensor = aten::softmax(%a, %m1, %none)"}) {
    // Definitions must come before uses: put the scale first when there is one.
    std::string ordered = scores;
    const auto split = scores.find('\n');
    if (split != std::string::npos) ordered = scores.substr(split + 1) + "\n" + scores.substr(0, split);
    auto graph = Attention(ordered, "  return (%r)");
    const auto inputs = Inputs();
    const auto want = RunGraph(graph, inputs);
    EXPECT_EQ(Fuse(graph, inputs), 1) << ordered;
    ExpectSameOutputs(want, RunGraph(graph, inputs));
  }
}

TEST(FuseScaledDotProductAttention, LeavesWhatTheFusedOpCannotComputeAlone) {
  torch::manual_seed(2);
  const std::string plain = R"IR(
  %s : Tensor = aten::div(%a, %eight)
  %p : Tensor = aten::softmax(%s, %m1, %none))IR";
  struct Case {
    std::string why, scores, tail;
  };
  const std::vector<Case> cases = {
      {"the probabilities are returned too", plain, "  return (%r, %p)"},
      {"the scores are returned too", plain, "  return (%r, %s)"},
      {"softmax over another dim", R"IR(
  %s : Tensor = aten::div(%a, %eight)
  %p : Tensor = aten::softmax(%s, %m2, %none))IR",
       "  return (%r)"},
      {"a mask added with alpha 2", R"IR(
  %s : Tensor = aten::div(%a, %eight)
  %sm : Tensor = aten::add(%s, %mask, %two)
  %p : Tensor = aten::softmax(%sm, %m1, %none))IR",
       "  return (%r)"},
      {"a mask added before the scaling", R"IR(
  %sm : Tensor = aten::add(%a, %mask, %one)
  %s : Tensor = aten::div(%sm, %eight)
  %p : Tensor = aten::softmax(%s, %m1, %none))IR",
       "  return (%r)"},
      {"a scale that is not a constant", R"IR(
  %c : int = aten::size(%x, %two)
  %s : Tensor = aten::div(%a, %c)
  %p : Tensor = aten::softmax(%s, %m1, %none))IR",
       "  return (%r)"},
  };
  for (const Case& c : cases) {
    auto graph = Attention(c.scores, c.tail);
    const auto inputs = Inputs();
    EXPECT_EQ(Fuse(graph, inputs), 0) << c.why;
    FileCheck().check("aten::softmax")->run(*graph);
  }
}

TEST(FuseScaledDotProductAttention, OperandsMustBeFourDimensional) {
  // Q K^T V on 3-D operands: the same pattern, but not the fused op's [batch, heads, L, E].
  auto graph = GraphWithConstants(R"IR(
graph(%q : Tensor, %k : Tensor, %v : Tensor):
  %m1 : int = prim::Constant[value=-1]()
  %m2 : int = prim::Constant[value=-2]()
  %none : NoneType = prim::Constant()
  %kt : Tensor = aten::transpose(%k, %m1, %m2)
  %a : Tensor = aten::matmul(%q, %kt)
  %p : Tensor = aten::softmax(%a, %m1, %none)
  %o : Tensor = aten::matmul(%p, %v)
  return (%o))IR",
                                  {});
  EXPECT_EQ(Fuse(graph, {torch::randn({3, 5, 4}), torch::randn({3, 6, 4}), torch::randn({3, 6, 2})}), 0);
  EXPECT_EQ(Fuse(graph, {torch::randn({1, 3, 5, 4}), torch::randn({1, 3, 6, 4}), torch::randn({1, 3, 6, 2})}), 1);
}

}  // namespace

namespace {

// Two attentions sharing K^T, the first one's output the second one's V: both fuse, and the second
// reads the fused first (not the value that fusing replaced).
TEST(FuseScaledDotProductAttention, StackedAttentionsSharingKeys) {
  torch::manual_seed(3);
  auto graph = GraphWithConstants(R"IR(
graph(%q : Tensor, %k : Tensor, %v : Tensor):
  %m1 : int = prim::Constant[value=-1]()
  %m2 : int = prim::Constant[value=-2]()
  %none : NoneType = prim::Constant()
  %kt : Tensor = aten::transpose(%k, %m1, %m2)
  %a : Tensor = aten::matmul(%q, %kt)
  %p : Tensor = aten::softmax(%a, %m1, %none)
  %o : Tensor = aten::matmul(%p, %v)
  %a2 : Tensor = aten::matmul(%q, %kt)
  %p2 : Tensor = aten::softmax(%a2, %m1, %none)
  %o2 : Tensor = aten::matmul(%p2, %o)
  return (%o2))IR",
                                  {});
  const std::vector<at::Tensor> inputs = {torch::randn({1, 2, 6, 4}), torch::randn({1, 2, 6, 4}),
                                          torch::randn({1, 2, 6, 3})};
  const auto want = RunGraph(graph, inputs);
  EXPECT_EQ(Fuse(graph, inputs), 2);
  graph->lint();
  FileCheck().check_count("aten::scaled_dot_product_attention", 2, /*exactly=*/true)->check_not("aten::transpose")->run(*graph);
  ExpectSameOutputs(want, RunGraph(graph, inputs));
}

}  // namespace
