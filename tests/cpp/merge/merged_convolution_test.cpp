// Merged convolutions: numerics of MergeConvolutions/RunMergedConvolution against separate
// convolutions, and which operators of a graph merge (IR level). Merge stages in the executor:
// merge_stage_test.cpp.
#include "merge/merged_convolution.h"

#include <gtest/gtest.h>
#include <torch/csrc/jit/ir/irparser.h>
#include <torch/torch.h>

#include <limits>
#include <map>
#include <random>

#include "autograph/error.h"
#include "graph_pass/import_op_graph.h"

namespace {

using autograph::CanMergeConvolutions;
using autograph::MergeableConvolutionClasses;
using autograph::MergeConvolutions;
using autograph::MergedConvolution;
using autograph::OpGraph;
using autograph::RunMergedConvolution;
using Classes = std::vector<std::vector<int>>;

bool Contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// --- MergeConvolutions / RunMergedConvolution -------------------------------------------------------

struct Conv {
  int64_t out, kh, kw, ph, pw;
  bool bias;
};

// The tolerance. Zero-padded taps multiply exact zeros and add nothing, so the merged kernel computes
// the same sums; but another kernel shape may make the library pick another algorithm or blocking,
// which adds the same products in another order. For any order, a sum of L products is within
// gamma_L = L*eps of the exact sum, relative to the sum of the products' magnitudes, so two orders
// differ by at most 2*L*eps*sum|x_i*w_i| per output element — computed here as conv2d(|x|, |w|) +
// |b| with L = in_channels*kh*kw + 1 (the bias) of the original convolution. Bit-exactness is not
// expected; anything beyond this bound would be a real error (a misplaced tap is off by O(1)).
void ExpectMatchesSeparate(const at::Tensor& x, const std::vector<Conv>& convs, int64_t stride, int64_t dilation,
                           const std::string& what) {
  std::vector<at::Tensor> weights;
  std::vector<std::optional<at::Tensor>> biases;
  std::vector<std::vector<int64_t>> paddings;
  for (const Conv& c : convs) {
    weights.push_back(torch::randn({c.out, x.size(1), c.kh, c.kw}, x.options()));
    biases.push_back(c.bias ? std::optional<at::Tensor>(torch::randn({c.out}, x.options())) : std::nullopt);
    paddings.push_back({c.ph * dilation, c.pw * dilation});
  }
  const MergedConvolution merged = MergeConvolutions(weights, biases, {stride, stride}, paddings, {dilation, dilation});
  const std::vector<at::Tensor> got = RunMergedConvolution(x, merged);
  ASSERT_EQ(got.size(), convs.size()) << what;
  const double eps = std::numeric_limits<double>::epsilon() * (x.scalar_type() == torch::kFloat ? 1 << 29 : 1);
  for (size_t i = 0; i < convs.size(); ++i) {
    // Reference and magnitude in one call (each new shape costs the library a setup): groups=2
    // over [x, |x|] with [w, |w|] gives conv(x, w) + b and conv(|x|, |w|) + |b| side by side.
    const at::Tensor& w = weights[i];
    const at::Tensor b = biases[i] ? *biases[i] : at::zeros({convs[i].out}, x.options());
    const at::Tensor both = at::conv2d(at::cat({x, x.abs()}, 1), at::cat({w, w.abs()}, 0), at::cat({b, b.abs()}),
                                       stride, paddings[i], dilation, /*groups=*/2);
    const at::Tensor want = both.narrow(1, 0, convs[i].out), magnitude = both.narrow(1, convs[i].out, convs[i].out);
    ASSERT_EQ(got[i].sizes(), want.sizes()) << what << " conv " << i;
    const double reduction = static_cast<double>(x.size(1) * convs[i].kh * convs[i].kw + 1);
    const at::Tensor excess = (got[i] - want).abs() - 2 * reduction * eps * magnitude;
    EXPECT_LE(excess.max().item<double>(), 0.0)
        << what << " conv " << i << ": max |error| " << (got[i] - want).abs().max().item<double>();
  }
}

TEST(MergedConvolution, EqualsSeparateConvolutions) {
  torch::manual_seed(0);
  std::mt19937 rng(1);
  // Kernel sets with one padding offset each (p = k/2 per dimension): 1/3/5 with mixed biases, and
  // Inception's 1x7 with 7x1 (and a 1x1).
  const std::vector<std::vector<Conv>> sets = {
      {{4, 1, 1, 0, 0, true}, {6, 3, 3, 1, 1, false}, {3, 5, 5, 2, 2, true}},
      {{5, 1, 7, 0, 3, false}, {7, 7, 1, 3, 0, true}, {2, 1, 1, 0, 0, false}},
      {{3, 3, 3, 1, 1, false}, {4, 1, 1, 0, 0, false}},  // no bias at all
      {{2, 2, 2, 0, 0, true}, {3, 4, 4, 1, 1, false}},  // even kernels: offset -1 both
  };
  // Every combination of dtype, batch, stride and dilation, each with one of the sets, so that every
  // set meets both values of every factor.
  for (int combination = 0; combination < 16; ++combination) {
    const bool is_double = combination & 1, batch3 = combination & 2, stride2 = combination & 4, dilation2 = combination & 8;
    const size_t set = (2 * stride2 + dilation2 + is_double + batch3) % sets.size();
    const int64_t batch = batch3 ? 3 : 1, stride = stride2 ? 2 : 1, dilation = dilation2 ? 2 : 1;
    const auto dtype = is_double ? torch::kDouble : torch::kFloat;
    const int64_t channels = 1 + rng() % 6, height = 9 + rng() % 8, width = 9 + rng() % 8;
    at::Tensor x = torch::randn({batch, channels, height, width}, torch::dtype(dtype));
    ExpectMatchesSeparate(x, sets[set], stride, dilation,
                          std::string(c10::toString(dtype)) + " batch " + std::to_string(batch) + " stride " +
                              std::to_string(stride) + " dilation " + std::to_string(dilation) + " set " +
                              std::to_string(set));
  }
}

TEST(MergedConvolution, PadsSmallerKernelsCentredAndSlicesTheOutput) {
  std::vector<at::Tensor> weights = {torch::randn({5, 3, 1, 7}), torch::randn({6, 3, 7, 1}), torch::randn({2, 3, 1, 1})};
  MergedConvolution m = MergeConvolutions(weights, {std::nullopt, torch::ones({6}), std::nullopt}, {1, 1},
                                          {{0, 3}, {3, 0}, {0, 0}}, {1, 1});
  EXPECT_EQ(m.weight.sizes(), (std::vector<int64_t>{13, 3, 7, 7}));
  EXPECT_EQ(m.padding, (std::vector<int64_t>{3, 3}));
  EXPECT_EQ(m.out_channels, (std::vector<int64_t>{5, 6, 2}));
  ASSERT_TRUE(m.bias.defined());
  EXPECT_TRUE(torch::equal(m.bias, torch::cat({torch::zeros({5}), torch::ones({6}), torch::zeros({2})})));
  // The 1x7 kernel sits in row 3, its original values, and zeros around it.
  EXPECT_TRUE(torch::equal(m.weight.slice(0, 0, 5).select(2, 3).unsqueeze(2), weights[0]));
  EXPECT_EQ(m.weight.slice(0, 0, 5).ne(0).sum().item<int64_t>(), weights[0].ne(0).sum().item<int64_t>());
  EXPECT_TRUE(torch::equal(m.weight.slice(0, 11, 13).slice(2, 3, 4).slice(3, 3, 4), weights[2]));

  auto slices = RunMergedConvolution(torch::randn({3, 3, 10, 10}), m);
  ASSERT_EQ(slices.size(), 3u);
  EXPECT_EQ(slices[1].sizes(), (std::vector<int64_t>{3, 6, 10, 10}));
  EXPECT_TRUE(slices[0].is_alias_of(slices[2]));  // views of one output, no copy
  EXPECT_FALSE(slices[1].is_contiguous());         // batch 3: a channel slice is strided
  EXPECT_TRUE(RunMergedConvolution(torch::randn({1, 3, 10, 10}), m)[1].is_contiguous());
}

std::string MergeError(const std::vector<at::Tensor>& weights, const std::vector<std::vector<int64_t>>& paddings,
                       std::vector<std::optional<at::Tensor>> biases = {}) {
  if (biases.empty()) biases.resize(weights.size());
  try {
    MergeConvolutions(weights, biases, {1, 1}, paddings, {1, 1});
  } catch (const autograph::Error& e) {
    return e.what();
  }
  return "";
}

TEST(MergedConvolution, RejectsConvolutionsThatDoNotFitWithTheReason) {
  const at::Tensor w3 = torch::randn({4, 3, 3, 3});
  auto msg = MergeError({w3, torch::randn({4, 5, 1, 1})}, {{1, 1}, {0, 0}});
  EXPECT_TRUE(Contains(msg, "conv 1 has 5 in-channels, conv 0 has 3")) << msg;
  msg = MergeError({w3, torch::randn({4, 3, 1, 1}, torch::kDouble)}, {{1, 1}, {0, 0}});
  EXPECT_TRUE(Contains(msg, "conv 1 has dtype Double")) << msg;
  msg = MergeError({w3, torch::randn({4, 3, 1, 1}, torch::Device("meta"))}, {{1, 1}, {0, 0}});
  EXPECT_TRUE(Contains(msg, "conv 1 is on meta")) << msg;
  msg = MergeError({w3, torch::randn({4, 3, 2, 2})}, {{1, 1}, {0, 0}});
  EXPECT_TRUE(Contains(msg, "conv 1") && Contains(msg, "parity")) << msg;
  msg = MergeError({w3, torch::randn({4, 3, 1, 1})}, {{1, 1}, {1, 1}});  // 1x1 with padding 1: a wider output
  EXPECT_TRUE(Contains(msg, "conv 1") && Contains(msg, "would change its output")) << msg;
  msg = MergeError({w3, torch::randn({4, 3, 3})}, {{1, 1}, {0, 0}});
  EXPECT_TRUE(Contains(msg, "conv 1 has a weight of shape [4, 3, 3]")) << msg;
  msg = MergeError({w3, torch::randn({4, 3, 1, 1})}, {{1, 1}, {0, 0}}, {std::nullopt, torch::randn({3})});
  EXPECT_TRUE(Contains(msg, "conv 1 has a bias of shape [3] for 4 out-channels")) << msg;
  msg = MergeError({w3, torch::randn({4, 3, 1, 1})}, {{1, 1}});
  EXPECT_TRUE(Contains(msg, "1 paddings")) << msg;
  EXPECT_EQ(MergeError({w3, torch::randn({4, 3, 1, 1})}, {{1, 1}, {0, 0}}), "");
}

// --- Which operators merge: IR level ------------------------------------------------------------------

std::shared_ptr<torch::jit::Graph> Parse(const std::string& ir) {
  auto graph = std::make_shared<torch::jit::Graph>();
  torch::jit::parseIR(ir, graph.get());
  return graph;
}

// Turns the graph inputs named in `constants` into tensor constants, as freezing does with weights.
void Freeze(torch::jit::Graph& graph, const std::map<std::string, at::Tensor>& constants) {
  torch::jit::WithInsertPoint guard(graph.block()->nodes().front());
  for (size_t i = graph.inputs().size(); i-- > 0;) {
    auto it = constants.find(graph.inputs()[i]->debugName());
    if (it == constants.end()) continue;
    graph.inputs()[i]->replaceAllUsesWith(graph.insertConstant(it->second));
    graph.eraseInput(i);
  }
}

// The id of the operator whose anchor computes graph output `index` (the IR parser does not keep
// value names, so tests find operators by what the graph returns).
int OpReturning(const OpGraph& g, size_t index) {
  const torch::jit::Node* producer = g.graph()->outputs().at(index)->node();
  for (const auto& n : g.nodes())
    if (n.anchor == producer) return n.id;
  ADD_FAILURE() << "no op computes output " << index;
  return -1;
}

constexpr const char* kSiblingsIR = R"IR(
graph(%x : Tensor, %w1 : Tensor, %w2 : Tensor, %w3 : Tensor, %w5 : Tensor, %b3 : Tensor, %wg : Tensor):
  %none : NoneType = prim::Constant()
  %false : bool = prim::Constant[value=0]()
  %true : bool = prim::Constant[value=1]()
  %one : int = prim::Constant[value=1]()
  %two : int = prim::Constant[value=2]()
  %s1 : int[] = prim::Constant[value=[1, 1]]()
  %s2 : int[] = prim::Constant[value=[2, 2]]()
  %p0 : int[] = prim::Constant[value=[0, 0]]()
  %p1 : int[] = prim::Constant[value=[1, 1]]()
  %p2 : int[] = prim::Constant[value=[2, 2]]()
  %same : str = prim::Constant[value="same"]()
  %a : Tensor = aten::conv2d(%x, %w1, %none, %s1, %p0, %s1, %one)
  %b : Tensor = aten::conv2d(%x, %w3, %b3, %s1, %p1, %s1, %one)
  %c : Tensor = aten::_convolution(%x, %w5, %none, %s1, %p2, %s1, %false, %p0, %one, %false, %false, %true, %true)
  %d : Tensor = aten::conv2d(%x, %w3, %none, %s1, %same, %s1, %one)
  %e : Tensor = aten::conv2d(%x, %w3, %none, %s1, %p0, %s1, %one)
  %f : Tensor = aten::conv2d(%x, %w3, %none, %s2, %p1, %s1, %one)
  %g : Tensor = aten::conv2d(%x, %wg, %none, %s1, %p1, %s1, %two)
  %r : Tensor = aten::relu(%x)
  %h : Tensor = aten::conv2d(%r, %w3, %none, %s1, %p1, %s1, %one)
  %w3x2 : Tensor = aten::mul(%w3, %two)
  %i : Tensor = aten::conv2d(%x, %w3x2, %none, %s1, %p1, %s1, %one)
  %sk : int[] = prim::ListConstruct(%two, %two)
  %k : Tensor = aten::conv2d(%x, %w1, %none, %sk, %p0, %s1, %one)
  %t : Tensor = aten::_convolution(%x, %w3, %none, %s1, %p1, %s1, %true, %p0, %one, %false, %false, %true, %true)
  %j : Tensor = aten::conv2d(%x, %w2, %none, %s1, %same, %s1, %one)
  return (%a, %b, %c, %d, %e, %f, %g, %h, %i, %k, %t, %r, %j))IR";
const std::string kSiblingsReturned = "abcdefghiktrj";  // the names above, in return order

class MergeableIR : public ::testing::Test {
 protected:
  void SetUp() override {
    auto graph = Parse(kSiblingsIR);
    Freeze(*graph, {{"w1", torch::randn({4, 4, 1, 1})},
                    {"w2", torch::randn({4, 4, 2, 2})},
                    {"w3", torch::randn({4, 4, 3, 3})},
                    {"w5", torch::randn({2, 4, 5, 5})},
                    {"b3", torch::randn({4})},
                    {"wg", torch::randn({4, 2, 3, 3})}});
    g_ = autograph::ImportOpGraph(graph, {torch::randn({1, 4, 9, 9})});
  }
  int Op(const std::string& name) const { return OpReturning(g_, kSiblingsReturned.find(name)); }
  std::string WhyNot(const std::vector<std::string>& names) const {
    std::vector<int> ops;
    for (const auto& n : names) ops.push_back(Op(n));
    std::string why;
    EXPECT_FALSE(CanMergeConvolutions(g_, ops, &why));
    return why;
  }
  OpGraph g_;
};

TEST_F(MergeableIR, ClassesShareInputStrideAndPaddingOffset) {
  // a 1x1 p0, b 3x3 p1 (bias), c 5x5 p2 (aten::_convolution), d 3x3 padding="same": one class;
  // f 3x3 p1 and k 1x1 (stride from a ListConstruct of constants) both with stride 2: another.
  EXPECT_EQ(MergeableConvolutionClasses(g_), (Classes{{Op("a"), Op("b"), Op("c"), Op("d")}, {Op("f"), Op("k")}}));
  std::string why;
  EXPECT_TRUE(CanMergeConvolutions(g_, {Op("d"), Op("a"), Op("c")}, &why)) << why;
  EXPECT_EQ(why, "");
}

TEST_F(MergeableIR, SaysWhyOperatorsDoNotMerge) {
  std::string why = WhyNot({"a", "e"});
  EXPECT_TRUE(Contains(why, "op " + std::to_string(Op("e")) + " (aten::conv2d)") &&
              Contains(why, "would change its output")) << why;
  why = WhyNot({"a", "f"});
  EXPECT_TRUE(Contains(why, "has stride [2, 2]")) << why;
  why = WhyNot({"a", "g"});
  EXPECT_TRUE(Contains(why, "groups = 2")) << why;
  why = WhyNot({"a", "h"});
  EXPECT_TRUE(Contains(why, "reads %") && Contains(why, "share one input")) << why;
  why = WhyNot({"a", "i"});
  EXPECT_TRUE(Contains(why, "has a weight computed at run time (%")) << why;
  why = WhyNot({"a", "t"});
  EXPECT_TRUE(Contains(why, "transposed")) << why;
  why = WhyNot({"a", "j"});
  EXPECT_TRUE(Contains(why, "padding='same' with a kernel that pads unevenly")) << why;
  why = WhyNot({"a", "r"});
  EXPECT_TRUE(Contains(why, "is aten::relu, not a convolution")) << why;
  why = WhyNot({"a"});
  EXPECT_TRUE(Contains(why, "at least 2 operators")) << why;
  why = WhyNot({"a", "a"});
  EXPECT_TRUE(Contains(why, "listed twice")) << why;
}

TEST(MergeableConvolutions, InPlaceWriteBetweenReadersKeepsThemApart) {
  auto graph = Parse(R"IR(
graph(%x : Tensor, %w : Tensor):
  %none : NoneType = prim::Constant()
  %one : int = prim::Constant[value=1]()
  %s1 : int[] = prim::Constant[value=[1, 1]]()
  %p1 : int[] = prim::Constant[value=[1, 1]]()
  %a : Tensor = aten::conv2d(%x, %w, %none, %s1, %p1, %s1, %one)
  %r : Tensor = aten::relu_(%x)
  %b : Tensor = aten::conv2d(%x, %w, %none, %s1, %p1, %s1, %one)
  return (%a, %b, %r))IR");
  Freeze(*graph, {{"w", torch::randn({2, 3, 3, 3})}});
  OpGraph g = autograph::ImportOpGraph(graph, {torch::randn({1, 3, 6, 6})});
  EXPECT_EQ(MergeableConvolutionClasses(g), Classes{});  // same value, but relu_ runs between them
  std::string why;
  EXPECT_FALSE(CanMergeConvolutions(g, {OpReturning(g, 0), OpReturning(g, 1)}, &why));
  EXPECT_TRUE(Contains(why, "depends on")) << why;
}

TEST(MergeableConvolutions, OperatorsWithoutTorchScriptNodesDoNotMerge) {
  OpGraph g;
  autograph::OpNode n;
  n.op = "aten::conv2d";
  n.kind = autograph::OpKind::ComputeBound;
  g.AddNode(n);
  g.AddNode(n);
  EXPECT_EQ(MergeableConvolutionClasses(g), Classes{});
  std::string why;
  EXPECT_FALSE(CanMergeConvolutions(g, {0, 1}, &why));
  EXPECT_TRUE(Contains(why, "op 0 (aten::conv2d) has no TorchScript node")) << why;
}

}  // namespace
