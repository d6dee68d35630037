// Optimized modules take and return what the original does: dicts, nested tuples and lists, None,
// and plain arguments (floats, ints, bools) that are not specialized to their example values.
#include <gtest/gtest.h>
#include <torch/script.h>

#include <sstream>
#include <string>
#include <vector>

#include "autograph/error.h"
#include "autograph/optimize.h"
#include "executor/program.h"

namespace {

// A scripted module with two weights, `w` [8, 8] and `v` [8, 8], and the given forward.
torch::jit::Module Scripted(const std::string& forward) {
  torch::jit::Module m("__torch__.StructuredModel");
  torch::manual_seed(0);
  m.register_parameter("w", torch::randn({8, 8}), false);
  m.register_parameter("v", torch::randn({8, 8}), false);
  m.define(forward);
  m.eval();
  return m;
}

autograph::OptimizeOptions Options(std::vector<c10::IValue> inputs, const std::string& method) {
  autograph::OptimizeOptions options;
  options.example_inputs = std::move(inputs);
  options.search.method = method;
  options.substitutions.check_rewrites = false;  // correctness only: keep every rewrite unmeasured
  options.search.verify = 0;
  return options;
}

// Same structure, same types, and tensors equal within 1e-5 of the output's scale: the optimized
// graph runs the original's operators on other threads, so only float reassociation may differ.
void ExpectSameValue(const c10::IValue& got, const c10::IValue& want, const std::string& where) {
  ASSERT_EQ(got.tagKind(), want.tagKind()) << where;
  if (want.isTensor()) {
    const at::Tensor g = got.toTensor(), w = want.toTensor();
    ASSERT_EQ(g.sizes(), w.sizes()) << where;
    const double scale = std::max(1.0, w.abs().max().item<double>());
    EXPECT_LE((g - w).abs().max().item<double>(), 1e-5 * scale) << where;
  } else if (want.isTuple()) {
    const auto& g = got.toTupleRef().elements();
    const auto& w = want.toTupleRef().elements();
    ASSERT_EQ(g.size(), w.size()) << where;
    for (size_t i = 0; i < w.size(); ++i) ExpectSameValue(g[i], w[i], where + "[" + std::to_string(i) + "]");
  } else if (want.isList()) {
    const auto g = got.toListRef();
    const auto w = want.toListRef();
    ASSERT_EQ(g.size(), w.size()) << where;
    for (size_t i = 0; i < w.size(); ++i) ExpectSameValue(g[i], w[i], where + "[" + std::to_string(i) + "]");
  } else if (want.isGenericDict()) {
    const auto g = got.toGenericDict();
    const auto w = want.toGenericDict();
    ASSERT_EQ(g.size(), w.size()) << where;
    auto gi = g.begin();
    for (auto wi = w.begin(); wi != w.end(); ++wi, ++gi) {
      ASSERT_EQ(gi->key(), wi->key()) << where << ": keys in the same order";
      ExpectSameValue(gi->value(), wi->value(), where + "[" + wi->key().toStringRef() + "]");
    }
  } else {
    EXPECT_EQ(got, want) << where;
  }
}

torch::jit::Module SaveAndLoad(const torch::jit::Module& m) {
  std::stringstream buffer;
  m.save(buffer);
  return torch::jit::load(buffer);
}

const char* kDictModel = R"(
def forward(self, inputs: Dict[str, Tensor]) -> Dict[str, Tensor]:
    h = torch.matmul(inputs["x"], self.w)
    g = torch.matmul(inputs["x"], self.v)
    return {"logits": torch.relu(h) + inputs["bias"], "hidden": torch.tanh(g), "sum": h + g}
)";

const char* kNestedModel = R"(
def forward(self, x: Tensor, pair: Tuple[Tensor, Tensor], scale: float, repeats: int, flag: bool, mask: Optional[Tensor]):
    a = torch.relu(torch.matmul(x, self.w))
    b = torch.sigmoid(torch.matmul(pair[0], self.v)) * scale
    c = pair[1]
    for _ in range(repeats):
        c = c + a
    if flag:
        c = c * 2.0
    if mask is not None:
        c = c * mask
    return (a, (b, None), [c, a + b], repeats + 1)
)";

class StructuredIo : public ::testing::TestWithParam<std::string> {};

TEST_P(StructuredIo, DictInDictOut) {
  torch::NoGradGuard no_grad;
  torch::jit::Module model = Scripted(kDictModel);
  auto example = [](int seed) {
    torch::manual_seed(seed);
    c10::Dict<std::string, at::Tensor> d;
    d.insert("x", torch::randn({4, 8}));
    d.insert("bias", torch::randn({4, 8}));
    return std::vector<c10::IValue>{d};
  };
  autograph::OptimizeReport report;
  torch::jit::Module optimized = autograph::optimize(model, Options(example(1), GetParam()), &report);
  EXPECT_GE(report.groups, 1);
  torch::jit::Module loaded = SaveAndLoad(optimized);
  for (int seed : {1, 2}) {
    const c10::IValue want = model.forward(example(seed));
    ExpectSameValue(optimized.forward(example(seed)), want, "optimized");
    ExpectSameValue(loaded.forward(example(seed)), want, "loaded");
  }
}

TEST_P(StructuredIo, NestedTuplesNoneAndPlainArguments) {
  torch::NoGradGuard no_grad;
  torch::jit::Module model = Scripted(kNestedModel);
  auto args = [](double scale, int64_t repeats, bool flag, bool masked) {
    torch::manual_seed(repeats);
    at::Tensor x = torch::randn({4, 8});
    c10::IValue pair = c10::ivalue::Tuple::create({torch::randn({4, 8}), torch::randn({4, 8})});
    c10::IValue mask = masked ? c10::IValue(torch::rand({4, 8})) : c10::IValue();
    return std::vector<c10::IValue>{x, pair, scale, repeats, flag, mask};
  };
  torch::jit::Module optimized = autograph::optimize(model, Options(args(0.5, 2, true, true), GetParam()));
  torch::jit::Module loaded = SaveAndLoad(optimized);
  // Other values of the plain arguments, and None for the optional tensor: nothing was specialized.
  for (const auto& call : {args(0.5, 2, true, true), args(-1.5, 0, false, true), args(2.0, 3, true, false)}) {
    const c10::IValue want = model.forward(call);
    ExpectSameValue(optimized.forward(call), want, "optimized");
    ExpectSameValue(loaded.forward(call), want, "loaded");
  }
}

// Another number of tensors runs as the original does (here: an extra dict entry the model ignores);
// a tensor of another rank where the example had one is a clear error.
TEST_P(StructuredIo, OtherStructuresRunAndWrongRanksAreClearErrors) {
  torch::NoGradGuard no_grad;
  torch::jit::Module model = Scripted(kDictModel);
  c10::Dict<std::string, at::Tensor> d;
  d.insert("x", torch::randn({4, 8}));
  d.insert("bias", torch::randn({4, 8}));
  torch::jit::Module optimized = autograph::optimize(model, Options({d}, GetParam()));
  c10::Dict<std::string, at::Tensor> three = d.copy();
  three.insert("extra", torch::randn({4, 8}));
  ExpectSameValue(optimized.forward({three}), model.forward({three}), "extra entry");
  c10::Dict<std::string, at::Tensor> flat = d.copy();
  flat.insert_or_assign("x", torch::randn({32}));
  try {
    optimized.forward({flat});
    ADD_FAILURE() << "a rank-1 x ran";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("input 0 has rank 1"), std::string::npos) << e.what();
  }
}

INSTANTIATE_TEST_SUITE_P(Methods, StructuredIo, ::testing::Values("autograph", "nimble", "sequential"),
                         [](const ::testing::TestParamInfo<std::string>& info) { return info.param; });

}  // namespace
