// The export path below Python: AtenGraph JSON (as python/autograph/export.py writes it) parsed,
// imported into an OpGraph (expected operators, views folded, edges), run through the dispatcher by
// the StageExecutor, and carried as AtenProgram text.
#include "graph_pass/import_aten_graph.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <torch/torch.h>

#include "autograph/error.h"
#include "core/aten_graph.h"
#include "executor/aten_program.h"
#include "executor/compiled_part_ops.h"
#include "executor/stage_executor.h"
#include "search/nimble_schedule.h"
#include "search/simple_schedulers.h"

namespace {

using autograph::AtenGraph;
using autograph::OpGraph;
using autograph::OpKind;
using nlohmann::json;

// x [2,4] -> w [3,4] (a weight) -> t (view of w) -> addmm(b, x, t) ; relu(x) and sigmoid(x) side by
// side; cat([mm_out... ]) as a list argument; split (a list return) with getitem; mul with a float.
const char* kGraph = R"JSON({
  "version": 1,
  "values": [
    {"tensor": true, "shape": [3, 4], "stride": [4, 1], "dtype": "Float"},
    {"tensor": true, "shape": [3], "stride": [1], "dtype": "Float"},
    {"tensor": true, "shape": [2, 4], "stride": [4, 1], "dtype": "Float"},
    {"tensor": true, "shape": [4, 3], "stride": [1, 4], "dtype": "Float"},
    {"tensor": true, "shape": [2, 3], "stride": [3, 1], "dtype": "Float"},
    {"tensor": true, "shape": [2, 4], "stride": [4, 1], "dtype": "Float"},
    {"tensor": true, "shape": [2, 4], "stride": [4, 1], "dtype": "Float"},
    {"tensor": true, "shape": [2, 11], "stride": [11, 1], "dtype": "Float"},
    {"tensor": false},
    {"tensor": true, "shape": [2, 5], "stride": [11, 1], "dtype": "Float"},
    {"tensor": true, "shape": [2, 5], "stride": [5, 1], "dtype": "Float"}
  ],
  "inputs": [0, 1, 2],
  "weights": [true, true, false],
  "nodes": [
    {"op": "aten::t", "overload": "default", "name": "t", "args": [{"value": 0}], "kwargs": {}, "outputs": [3]},
    {"op": "aten::addmm", "overload": "default", "name": "addmm", "args": [{"value": 1}, {"value": 2}, {"value": 3}], "kwargs": {}, "outputs": [4]},
    {"op": "aten::relu", "overload": "default", "name": "relu", "args": [{"value": 2}], "kwargs": {}, "outputs": [5]},
    {"op": "aten::sigmoid", "overload": "default", "name": "sigmoid", "args": [{"value": 2}], "kwargs": {}, "outputs": [6]},
    {"op": "aten::cat", "overload": "default", "name": "cat", "args": [{"values": [4, 5, 6]}], "kwargs": {"dim": 1}, "outputs": [7]},
    {"op": "aten::split_with_sizes", "overload": "default", "name": "split", "args": [{"value": 7}, {"ints": [5, 6]}, 1], "kwargs": {}, "outputs": [8]},
    {"op": "getitem", "overload": "default", "name": "getitem", "args": [{"value": 8}, 0], "kwargs": {}, "outputs": [9]},
    {"op": "aten::mul", "overload": "Scalar", "name": "mul", "args": [{"value": 9}, {"float": "0.5"}], "kwargs": {}, "outputs": [10]}
  ],
  "outputs": [10]
})JSON";

std::shared_ptr<const AtenGraph> Graph(const std::string& text = kGraph) {
  return std::make_shared<const AtenGraph>(AtenGraph::FromJson(json::parse(text)));
}

std::vector<std::string> Ops(const OpGraph& g) {
  std::vector<std::string> ops;
  for (const auto& n : g.nodes()) ops.push_back(n.op);
  return ops;
}

std::vector<c10::IValue> Inputs() {
  torch::manual_seed(0);
  return {torch::randn({3, 4}), torch::randn({3}), torch::randn({2, 4})};
}

torch::Tensor Reference(const std::vector<c10::IValue>& in) {
  const auto w = in[0].toTensor(), b = in[1].toTensor(), x = in[2].toTensor();
  auto cat = torch::cat({torch::addmm(b, x, w.t()), torch::relu(x), torch::sigmoid(x)}, 1);
  return cat.split_with_sizes({5, 6}, 1)[0] * 0.5;
}

TEST(AtenGraph, JsonRoundTrips) {
  auto g = Graph();
  EXPECT_EQ(g->nodes.size(), 8u);
  EXPECT_EQ(g->nodes[7].overload, "Scalar");
  EXPECT_EQ(g->nodes[0].overload, "");  // "default"
  EXPECT_DOUBLE_EQ(g->nodes[7].args[1].constant.toDouble(), 0.5);
  const AtenGraph again = AtenGraph::FromJson(g->ToJson());
  EXPECT_EQ(again.ToJson(), g->ToJson());
  EXPECT_EQ(g->Describe(1), "aten::addmm (%addmm)");
}

TEST(AtenGraph, MalformedGraphsAreRefusedWithWhatIsWrong) {
  auto with = [](const std::string& from, const std::string& to) {
    std::string text = kGraph;
    text.replace(text.find(from), from.size(), to);
    return text;
  };
  EXPECT_THROW(Graph("[1, 2]"), autograph::Error);
  try {
    Graph(with(R"("args": [{"value": 9}, {"float")", R"("args": [{"value": 10}, {"float")"));
    FAIL() << "a read before its definition was accepted";
  } catch (const autograph::Error& e) {
    EXPECT_NE(std::string(e.what()).find("before it is defined"), std::string::npos) << e.what();
  }
  EXPECT_THROW(Graph(with(R"("outputs": [10])", R"("outputs": [11])")), autograph::Error);  // no value 11
  EXPECT_THROW(Graph(with(R"("outputs": [4]})", R"("outputs": [3]})")), autograph::Error);  // defined twice
  EXPECT_THROW(Graph(with(R"({"float": "0.5"})", R"({"float": "half"})")), autograph::Error);
  EXPECT_THROW(Graph(with(R"("dtype": "Float"},
    {"tensor": true, "shape": [3])", R"("dtype": "Quux"},
    {"tensor": true, "shape": [3])")), autograph::UnsupportedModelError);
  EXPECT_THROW(Graph(with(R"("version": 1)", R"("version": 2)")), autograph::Error);
}

TEST(ImportAtenGraph, ViewsJoinTheirOperatorAndBranchesAreIndependent) {
  OpGraph g = autograph::ImportAtenGraph(Graph());
  // t (a view of a weight) joins its one reader addmm; split (a view read by getitem) and getitem join
  // cat, which produces their input; relu and sigmoid stand alone.
  EXPECT_EQ(Ops(g), (std::vector<std::string>{"aten::addmm", "aten::relu", "aten::sigmoid", "aten::cat", "aten::mul"}));
  EXPECT_EQ(g.node(0).aten_nodes, (std::vector<int>{0, 1}));
  EXPECT_EQ(g.node(0).aten_anchor, 1);
  EXPECT_EQ(g.node(3).aten_nodes, (std::vector<int>{4, 5, 6}));
  EXPECT_EQ(g.node(0).kind, OpKind::ComputeBound);
  EXPECT_EQ(g.node(1).kind, OpKind::MemoryBound);
  EXPECT_DOUBLE_EQ(g.node(0).flops, 2.0 * 2 * 3 * 4);
  EXPECT_EQ(g.node(0).weight_bytes, (12 + 3) * 4);  // w through its view, and the bias
  EXPECT_EQ(g.node(0).bytes_read, (12 + 3 + 8) * 4);
  for (int op : {0, 1, 2}) EXPECT_TRUE(g.preds(op).empty()) << op;
  EXPECT_EQ(g.preds(3), (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(g.preds(4), (std::vector<int>{3}));
}

TEST(ImportAtenGraph, AnUnregisteredOperatorNamesItselfAndTheFix) {
  std::string text = kGraph;
  text.replace(text.find("aten::relu"), 10, "mylib::relu");
  try {
    autograph::ImportAtenGraph(Graph(text));
    FAIL() << "an unknown operator was imported";
  } catch (const autograph::UnsupportedModelError& e) {
    EXPECT_NE(std::string(e.what()).find("mylib::relu is not registered"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("load_library"), std::string::npos) << e.what();
  }
}

// A compiled part (Inductor's, OpenVINO's, ONNX Runtime's) is planned as one operator with the FLOPs
// and kind its spec carries, whichever compiler made it.
TEST(ImportAtenGraph, EveryCompiledPartIsPlannedByItsSpec) {
  for (std::string_view op : autograph::kCompiledPartOps) {
    const json spec = {{"format", "any"}, {"digest", "d"}, {"outputs", json::array()}, {"flops", 1234.0},
                       {"compute_bound", true}};
    const json graph = {
        {"version", 1},
        {"values", {{{"tensor", true}, {"shape", {2, 4}}, {"stride", {4, 1}}, {"dtype", "Float"}},
                    {{"tensor", true}, {"shape", {16}}, {"stride", {1}}, {"dtype", "Byte"}},
                    {{"tensor", false}},
                    {{"tensor", true}, {"shape", {2, 4}}, {"stride", {4, 1}}, {"dtype", "Float"}}}},
        {"inputs", {0, 1}},
        {"weights", {false, true}},
        {"nodes", {{{"op", std::string(op)}, {"overload", "default"}, {"name", "part"},
                    {"args", {{{"values", {0}}}, {{"value", 1}}, {{"str", spec.dump()}}}}, {"kwargs", json::object()},
                    {"outputs", {2}}},
                   {{"op", "getitem"}, {"overload", "default"}, {"name", "getitem"}, {"args", {{{"value", 2}}, 0}},
                    {"kwargs", json::object()}, {"outputs", {3}}}}},
        {"outputs", {3}}};
    const OpGraph g = autograph::ImportAtenGraph(Graph(graph.dump()));
    ASSERT_EQ(Ops(g), (std::vector<std::string>{std::string(op)})) << op;
    EXPECT_EQ(g.node(0).kind, OpKind::ComputeBound) << op;
    EXPECT_DOUBLE_EQ(g.node(0).flops, 1234.0) << op;
  }
}

TEST(AtenGraphExecution, EveryScheduleComputesWhatATenDoes) {
  OpGraph g = autograph::ImportAtenGraph(Graph());
  const auto inputs = Inputs();
  const torch::Tensor want = Reference(inputs);
  for (const autograph::Schedule& schedule : {autograph::SequentialSchedule(g), autograph::NimbleSchedule(g, 4)}) {
    autograph::StageExecutor executor(g, schedule);
    auto out = executor.Run(inputs);
    ASSERT_EQ(out.size(), 1u);
    EXPECT_TRUE(torch::allclose(out[0].toTensor(), want));
  }
  EXPECT_GE(autograph::NimbleSchedule(g, 4).stages.front().groups.size(), 1u);
}

TEST(AtenProgram, TextRoundTripsAndRuns) {
  OpGraph g = autograph::ImportAtenGraph(Graph());
  autograph::AtenProgram program(g, autograph::NimbleSchedule(g, 4), autograph::ExecutorOptions{});
  const std::string text = program.ToText();
  const auto header = json::parse(text.substr(0, text.find('\n')));
  EXPECT_EQ(header.at("format"), "autograph-program");
  EXPECT_EQ(header.at("outputs").at(0).at("shape"), (std::vector<int64_t>{2, 5}));
  auto loaded = autograph::AtenProgram::FromText(text);
  EXPECT_EQ(loaded->ToText(), text);
  std::vector<torch::Tensor> tensors;
  for (const auto& v : Inputs()) tensors.push_back(v.toTensor());
  auto out = autograph::AtenProgram::Cached(text)->Run(tensors);
  EXPECT_TRUE(torch::allclose(out.at(0), Reference(Inputs())));
  EXPECT_EQ(autograph::AtenProgram::Cached(text).get(), autograph::AtenProgram::Cached(text).get());
}

TEST(AtenProgram, DamagedTextAndWrongInputsAreClearErrors) {
  OpGraph g = autograph::ImportAtenGraph(Graph());
  const std::string text = autograph::AtenProgram(g, autograph::SequentialSchedule(g), {}).ToText();
  EXPECT_THROW(autograph::AtenProgram::FromText("{}\n{}"), autograph::Error);
  std::string edited = text;
  edited[edited.size() - 3] = edited[edited.size() - 3] == '1' ? '2' : '1';
  try {
    autograph::AtenProgram::FromText(edited);
    FAIL() << "an edited program loaded";
  } catch (const autograph::Error& e) {
    EXPECT_NE(std::string(e.what()).find("digest"), std::string::npos) << e.what();
  }
  auto program = autograph::AtenProgram::FromText(text);
  EXPECT_THROW(program->Run({torch::randn({3, 4}), torch::randn({3})}), autograph::InputError);
  EXPECT_THROW(program->Run({torch::randn({3, 4}), torch::randn({3}), torch::randn({2, 4, 1})}), autograph::InputError);
  EXPECT_THROW(program->Run({torch::randn({3, 4}), torch::randn({3}), torch::randn({2, 4}).to(torch::kDouble)}),
               autograph::InputError);
}

}  // namespace
