// One exported node as a dispatcher call (aten_operation.h): aten::linear on an input of three dims
// runs as one GEMM over the input folded to 2-D, with the functional op's result.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <torch/torch.h>

#include "core/aten_graph.h"
#include "executor/compiled_graph.h"

namespace {

using autograph::AtenGraph;
using autograph::CompiledGraph;

// x [2, 6, 4] -> t = x.transpose(0, 1) [6, 2, 4] (not viewable as 2-D) -> linear(t, w [5, 4], b [5]).
const char* kLinear = R"JSON({
  "version": 1,
  "values": [{"tensor": true, "shape": [5, 4], "stride": [4, 1], "dtype": "Float"},
             {"tensor": true, "shape": [5], "stride": [1], "dtype": "Float"},
             {"tensor": true, "shape": [2, 6, 4], "stride": [24, 4, 1], "dtype": "Float"},
             {"tensor": true, "shape": [6, 2, 4], "stride": [4, 24, 1], "dtype": "Float"},
             {"tensor": true, "shape": [6, 2, 5], "stride": [10, 5, 1], "dtype": "Float"}],
  "inputs": [0, 1, 2], "weights": [true, true, false],
  "nodes": [
    {"op": "aten::transpose", "overload": "int", "name": "t", "args": [{"value": 2}, 0, 1], "kwargs": {}, "outputs": [3]},
    {"op": "aten::linear", "overload": "default", "name": "linear", "args": [{"value": 3}, {"value": 0}, {"value": 1}],
     "kwargs": {}, "outputs": [4]}],
  "outputs": [4]})JSON";

TEST(AtenStep, ALinearOfAThreeDimInputIsTheFunctionalResult) {
  auto graph = std::make_shared<const AtenGraph>(AtenGraph::FromJson(nlohmann::json::parse(kLinear)));
  const CompiledGraph compiled(graph, {0, 1});
  torch::manual_seed(0);
  const auto w = torch::randn({5, 4}), b = torch::randn({5}), x = torch::randn({2, 6, 4});
  const auto out = compiled.Run({w, b, x})[0].toTensor();
  const auto want = torch::linear(x.transpose(0, 1), w, b);
  EXPECT_EQ(out.sizes(), want.sizes());
  EXPECT_TRUE(out.is_contiguous());
  EXPECT_TRUE(torch::allclose(out, want, 1e-5, 1e-6));
}

}  // namespace
