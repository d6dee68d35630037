// In-place twins on an exported program's graph: which nodes get one (aten_operation.h), and that the
// executor writes into a tensor only where nothing else holds it (CompiledGraph::RunStep).
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <torch/torch.h>

#include "core/aten_graph.h"
#include "executor/aten_operation.h"
#include "executor/compiled_graph.h"

namespace {

using autograph::AtenGraph;
using autograph::CompiledGraph;

// x [2,4], y [4] -> a = x * 2 -> b = relu(a) -> c = a + b (a read twice: relu may not overwrite it)
// -> d = y + c (its first argument broadcasts: no twin) -> e = sigmoid(d) -> f = e * e (reads e
// twice: no twin) -> g = f.t() (a view: no twin).
const char* kGraph = R"JSON({
  "version": 1,
  "values": [
    {"tensor": true, "shape": [2, 4], "stride": [4, 1], "dtype": "Float"},
    {"tensor": true, "shape": [4], "stride": [1], "dtype": "Float"},
    {"tensor": true, "shape": [2, 4], "stride": [4, 1], "dtype": "Float"},
    {"tensor": true, "shape": [2, 4], "stride": [4, 1], "dtype": "Float"},
    {"tensor": true, "shape": [2, 4], "stride": [4, 1], "dtype": "Float"},
    {"tensor": true, "shape": [2, 4], "stride": [4, 1], "dtype": "Float"},
    {"tensor": true, "shape": [2, 4], "stride": [4, 1], "dtype": "Float"},
    {"tensor": true, "shape": [2, 4], "stride": [4, 1], "dtype": "Float"},
    {"tensor": true, "shape": [4, 2], "stride": [1, 4], "dtype": "Float"}
  ],
  "inputs": [0, 1],
  "weights": [false, false],
  "nodes": [
    {"op": "aten::mul", "overload": "Scalar", "name": "a", "args": [{"value": 0}, {"float": "2.0"}], "kwargs": {}, "outputs": [2]},
    {"op": "aten::relu", "overload": "default", "name": "b", "args": [{"value": 2}], "kwargs": {}, "outputs": [3]},
    {"op": "aten::add", "overload": "Tensor", "name": "c", "args": [{"value": 2}, {"value": 3}], "kwargs": {}, "outputs": [4]},
    {"op": "aten::add", "overload": "Tensor", "name": "d", "args": [{"value": 1}, {"value": 4}], "kwargs": {}, "outputs": [5]},
    {"op": "aten::sigmoid", "overload": "default", "name": "e", "args": [{"value": 5}], "kwargs": {}, "outputs": [6]},
    {"op": "aten::mul", "overload": "Tensor", "name": "f", "args": [{"value": 6}, {"value": 6}], "kwargs": {}, "outputs": [7]},
    {"op": "aten::t", "overload": "default", "name": "g", "args": [{"value": 7}], "kwargs": {}, "outputs": [8]}
  ],
  "outputs": [8]
})JSON";

std::shared_ptr<const AtenGraph> Graph() {
  return std::make_shared<const AtenGraph>(AtenGraph::FromJson(nlohmann::json::parse(kGraph)));
}

CompiledGraph Compiled() { return CompiledGraph(Graph(), {0, 1, 2, 3, 4, 5, 6}); }

torch::Tensor Reference(const torch::Tensor& x, const torch::Tensor& y) {
  auto a = x * 2, b = torch::relu(a), c = a + b, d = y + c, e = torch::sigmoid(d);
  return (e * e).t();
}

TEST(InPlaceTwin, OnlyElementwiseResultsShapedAsTheirFirstArgumentReadOnce) {
  auto g = Graph();
  std::vector<bool> has;
  std::vector<int> written;
  for (int n = 0; n < static_cast<int>(g->nodes.size()); ++n) {
    int self_read = -1;
    has.push_back(static_cast<bool>(autograph::InPlaceTwinOf(*g, n, &self_read)));
    written.push_back(self_read);
  }
  EXPECT_EQ(has, (std::vector<bool>{true, true, true, false, true, false, false}));
  EXPECT_EQ(written[2], 0);  // add(a, b) writes a
}

TEST(InPlaceTwin, NoneForTwinsThatResizeTheirArgument) {
  // resize_ has resize's arguments and returns its first, but changes its sizes, not its values: at
  // another shape the graph runs, the same node would resize a tensor something else reads.
  const auto g = AtenGraph::FromJson(nlohmann::json::parse(R"JSON({
    "version": 1,
    "values": [{"tensor": true, "shape": [2, 4], "stride": [4, 1], "dtype": "Float"},
               {"tensor": true, "shape": [2, 4], "stride": [4, 1], "dtype": "Float"}],
    "inputs": [0], "weights": [false],
    "nodes": [{"op": "aten::resize", "overload": "default", "name": "r", "args": [{"value": 0}, {"ints": [2, 4]}],
               "kwargs": {}, "outputs": [1]}],
    "outputs": [1]})JSON"));
  int self_read = -1;
  EXPECT_FALSE(autograph::InPlaceTwinOf(g, 0, &self_read));
}

// x [2,4] -> a = x * 1 -> b = clone(a) (an eval-mode dropout, as export writes it: the twin hands a
// over) -> c = b.t() -> d = clone(c, contiguous) (a real copy: its layout differs from c's).
const char* kClones = R"JSON({
  "version": 1,
  "values": [{"tensor": true, "shape": [2, 4], "stride": [4, 1], "dtype": "Float"},
             {"tensor": true, "shape": [2, 4], "stride": [4, 1], "dtype": "Float"},
             {"tensor": true, "shape": [2, 4], "stride": [4, 1], "dtype": "Float"},
             {"tensor": true, "shape": [4, 2], "stride": [1, 4], "dtype": "Float"},
             {"tensor": true, "shape": [4, 2], "stride": [2, 1], "dtype": "Float"}],
  "inputs": [0], "weights": [false],
  "nodes": [
    {"op": "aten::mul", "overload": "Scalar", "name": "a", "args": [{"value": 0}, {"float": "1.0"}], "kwargs": {}, "outputs": [1]},
    {"op": "aten::clone", "overload": "default", "name": "b", "args": [{"value": 1}], "kwargs": {}, "outputs": [2]},
    {"op": "aten::t", "overload": "default", "name": "c", "args": [{"value": 2}], "kwargs": {}, "outputs": [3]},
    {"op": "aten::clone", "overload": "default", "name": "d", "args": [{"value": 3}],
     "kwargs": {"memory_format": {"memory_format": "Contiguous"}}, "outputs": [4]}],
  "outputs": [4]})JSON";

TEST(InPlaceTwin, ACloneOfATensorNothingElseHoldsIsThatTensor) {
  auto g = std::make_shared<const AtenGraph>(AtenGraph::FromJson(nlohmann::json::parse(kClones)));
  int self_read = -1;
  EXPECT_TRUE(autograph::InPlaceTwinOf(*g, 1, &self_read));
  EXPECT_FALSE(autograph::InPlaceTwinOf(*g, 3, &self_read));  // contiguous from a transposed layout
  const CompiledGraph compiled(g, {0, 1, 2, 3});
  const auto x = torch::randn({2, 4});
  torch::jit::Stack stack;
  CompiledGraph::Table table = compiled.NewTable({x});
  compiled.RunStep(0, table, stack);
  const void* a_memory = table[1].toTensor().data_ptr();
  // The sequential release plan clears a (slot 1) right after the clone, its one reader.
  const auto releases_a = compiled.PlanReleases(std::vector<int>(4, 0), std::vector<int>(4, 0), 1);
  compiled.RunStep(1, table, stack, &releases_a);
  EXPECT_EQ(table[2].toTensor().data_ptr(), a_memory);  // no copy
  const auto out = compiled.Run({x});
  EXPECT_TRUE(torch::equal(out[0].toTensor(), x.t()));
  EXPECT_TRUE(out[0].toTensor().is_contiguous());
  EXPECT_NE(out[0].toTensor().data_ptr(), x.data_ptr());  // never the caller's tensor
}

TEST(InPlaceTwin, RunsMatchTheFunctionalGraphAndLeaveInputsAlone) {
  torch::manual_seed(0);
  const auto x = torch::randn({2, 4}), y = torch::randn({4});
  const auto x0 = x.clone(), y0 = y.clone();
  const CompiledGraph compiled = Compiled();
  for (int run = 0; run < 2; ++run) {
    auto out = compiled.Run({x, y});
    ASSERT_EQ(out.size(), 1u);
    EXPECT_TRUE(torch::allclose(out[0].toTensor(), Reference(x0, y0)));
    EXPECT_TRUE(torch::equal(x, x0) && torch::equal(y, y0));  // the caller's tensors are never written
  }
}

TEST(InPlaceTwin, WritesOnlyWhenTheTableAloneHoldsTheTensorAndReleasesIt) {
  torch::manual_seed(0);
  const auto x = torch::randn({2, 4}), y = torch::randn({4});
  const CompiledGraph compiled = Compiled();
  // The sequential release plan clears d (slot 5) right after sigmoid, its one reader.
  const auto releases_d = compiled.PlanReleases(std::vector<int>(7, 0), std::vector<int>(7, 0), 1);
  torch::jit::Stack stack;

  // d (slot 5) is sigmoid's first argument and released after it: e takes d's memory.
  CompiledGraph::Table table = compiled.NewTable({x, y});
  for (size_t step = 0; step < 4; ++step) compiled.RunStep(step, table, stack);
  const void* d_memory = table[5].toTensor().data_ptr();
  const auto want = torch::sigmoid(table[5].toTensor());
  compiled.RunStep(4, table, stack, &releases_d);
  EXPECT_EQ(table[6].toTensor().data_ptr(), d_memory);
  EXPECT_TRUE(torch::allclose(table[6].toTensor(), want));

  // Someone else holds d: e gets memory of its own and d stays as it was.
  table = compiled.NewTable({x, y});
  for (size_t step = 0; step < 4; ++step) compiled.RunStep(step, table, stack);
  const torch::Tensor held = table[5].toTensor();
  const torch::Tensor before = held.clone();
  compiled.RunStep(4, table, stack, &releases_d);
  EXPECT_NE(table[6].toTensor().data_ptr(), held.data_ptr());
  EXPECT_TRUE(torch::equal(held, before));

  // A view of d is alive (its storage is shared): no write either.
  table = compiled.NewTable({x, y});
  for (size_t step = 0; step < 4; ++step) compiled.RunStep(step, table, stack);
  const torch::Tensor view = table[5].toTensor().view({8});
  const torch::Tensor view_before = view.clone();
  compiled.RunStep(4, table, stack, &releases_d);
  EXPECT_TRUE(torch::equal(view, view_before));

  // Not released after the step (read later, as far as the caller's plan says): no write.
  table = compiled.NewTable({x, y});
  for (size_t step = 0; step < 4; ++step) compiled.RunStep(step, table, stack);
  const void* kept_memory = table[5].toTensor().data_ptr();
  compiled.RunStep(4, table, stack);
  EXPECT_NE(table[6].toTensor().data_ptr(), kept_memory);
  EXPECT_TRUE(table[5].isTensor());
}

}  // namespace
