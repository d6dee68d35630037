// The option table: the Python / JSON option names onto OptimizeOptions, validated by what the table
// declares (type, choices, bounds), and the table as JSON for Python and the docs.
#include "api/option_table.h"

#include <gtest/gtest.h>
#include <torch/script.h>

#include <algorithm>

#include <nlohmann/json.hpp>

#include "api/resolve_options.h"
#include "autograph/error.h"
#include "autograph/optimize.h"
#include "autograph/substitute.h"

namespace {

using nlohmann::json;

TEST(OptimizeOptionsFromJson, SetsWhatIsGivenAndKeepsTheDefaults) {
  autograph::OptimizeOptions o = autograph::OptimizeOptionsFromJson(json::parse(R"({
    "method": "ios", "device": "cpu", "max_streams": 3, "ios_r": 2, "ios_s": 5, "ios_block": 12,
    "verify": 0, "alpha": 0.5, "budget": 7, "block_states": 99, "r": 2, "time_limit": 1.5,
    "stitch": false, "inductor": false, "check_rewrites": false, "cost": "analytical", "device_model": "h100", "cost_cache": "none"})"));
  EXPECT_EQ(o.search.method, "ios");
  EXPECT_EQ(o.executor.device, c10::Device(c10::kCPU));
  EXPECT_EQ(o.search.max_streams, 3);
  EXPECT_EQ(o.search.ios_r, 2);
  EXPECT_EQ(o.search.ios_s, 5);
  EXPECT_EQ(o.search.ios_block, 12);
  EXPECT_EQ(o.search.verify, 0);
  EXPECT_DOUBLE_EQ(o.search.alpha, 0.5);
  EXPECT_EQ(o.search.budget, 7);
  EXPECT_EQ(o.search.block_states, 99);
  EXPECT_EQ(o.search.autograph_r, 2);
  EXPECT_DOUBLE_EQ(o.search.time_limit, 1.5);
  EXPECT_FALSE(o.substitutions.stitch);
  EXPECT_FALSE(o.substitutions.inductor);
  EXPECT_FALSE(o.substitutions.check_rewrites);
  EXPECT_EQ(o.cost.model, "analytical");
  EXPECT_EQ(o.cost.device_model, "h100");
  EXPECT_EQ(o.cost.cache, "none");
  const autograph::OptimizeOptions defaults;
  EXPECT_EQ(o.search.block_ops, defaults.search.block_ops);
  EXPECT_EQ(o.substitutions.fuse_attention, defaults.substitutions.fuse_attention);
  EXPECT_EQ(o.executor.cuda_graph, defaults.executor.cuda_graph);
}

TEST(OptimizeOptionsFromJson, SubstitutionsSwitchesTheSixRewritesOfTheGraph) {
  autograph::OptimizeOptions o = autograph::OptimizeOptionsFromJson(json{{"substitutions", false}});
  const auto& s = o.substitutions;
  EXPECT_FALSE(s.fuse_attention || s.merge_linears || s.regroup_convolutions || s.fold_conv_relu ||
               s.prepack_onednn || s.channels_last_pools);
  EXPECT_TRUE(s.stitch);  // stitching has its own switch, as the CLI's --no-substitutions
  // The group switch applies first, then the single ones, whatever the keys' order.
  o = autograph::OptimizeOptionsFromJson(json::parse(R"({"fuse_attention": false, "substitutions": true})"));
  EXPECT_FALSE(o.substitutions.fuse_attention);
  EXPECT_TRUE(o.substitutions.merge_linears);
}

TEST(OptimizeOptionsFromJson, EveryKeyIsKnownAndTheTableHasNoDuplicates) {
  std::vector<std::string> keys = autograph::OptimizeOptionKeys();
  EXPECT_EQ(keys.size(), 36u);
  std::sort(keys.begin(), keys.end());
  EXPECT_EQ(std::adjacent_find(keys.begin(), keys.end()), keys.end());
}

TEST(OptimizeOptionsFromJson, PrecisionTakesItsChoicesAndToleranceItsRange) {
  const autograph::OptimizeOptions o =
      autograph::OptimizeOptionsFromJson(json::parse(R"({"precision": "bf16", "tolerance": 0.05})"));
  EXPECT_EQ(o.numerics.precision, "bf16");
  EXPECT_DOUBLE_EQ(o.numerics.tolerance, 0.05);
  EXPECT_EQ(autograph::OptimizeOptions{}.numerics.precision, "fp32");  // today's behaviour by default
  EXPECT_EQ(autograph::OptimizeOptionsFromJson(json::parse(R"({"precision": "fp16"})")).numerics.precision, "fp16");
  EXPECT_THROW(autograph::OptimizeOptionsFromJson(json::parse(R"({"precision": "fp8"})")), autograph::InputError);
  EXPECT_THROW(autograph::OptimizeOptionsFromJson(json::parse(R"({"tolerance": -1})")), autograph::InputError);
  EXPECT_THROW(autograph::OptimizeOptionsFromJson(json::parse(R"({"tolerance": 2})")), autograph::InputError);
  EXPECT_EQ(autograph::OptimizeOptionsFromJson(json::parse(R"({"precision": "int8"})")).numerics.precision, "int8");
  EXPECT_EQ(autograph::OptimizeOptions{}.numerics.accuracy, "max_error");
  EXPECT_EQ(autograph::OptimizeOptionsFromJson(json::parse(R"({"accuracy": "top1"})")).numerics.accuracy, "top1");
  EXPECT_THROW(autograph::OptimizeOptionsFromJson(json::parse(R"({"accuracy": "top5"})")), autograph::InputError);
}

TEST(OptimizeOptionsToJson, ListsWhatDiffersFromTheDefaultsAndReadsBack) {
  EXPECT_EQ(autograph::OptimizeOptionsToJson(autograph::OptimizeOptions{}), json::object());
  autograph::OptimizeOptions o;
  o.search.method = "nimble";
  o.search.verify = 1;
  o.substitutions.fuse_attention = false;
  o.plan_new_shapes = 3;
  o.shapes = {{{1, 8}}};  // not among them: a plan made at call time is for the call's shapes
  const json written = autograph::OptimizeOptionsToJson(o);
  EXPECT_FALSE(written.contains("shapes"));
  const autograph::OptimizeOptions read = autograph::OptimizeOptionsFromJson(written);
  EXPECT_EQ(read.search.method, "nimble");
  EXPECT_EQ(read.search.verify, 1);
  EXPECT_FALSE(read.substitutions.fuse_attention);
  EXPECT_TRUE(read.substitutions.merge_linears);
  EXPECT_EQ(read.plan_new_shapes, 3);
  EXPECT_EQ(autograph::OptimizeOptionsToJson(read), written);
}

TEST(OptimizeOptionsFromJson, UnknownKeysWrongTypesAndBadDevicesAreInputErrors) {
  auto message = [](const json& j) {
    try {
      autograph::OptimizeOptionsFromJson(j);
    } catch (const autograph::InputError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(message(json{{"max_stream", 2}}).find("unknown option 'max_stream'; the options are: method,"),
            std::string::npos);
  EXPECT_NE(message(json{{"verify", "three"}}).find("option 'verify' has the wrong type"), std::string::npos);
  EXPECT_NE(message(json{{"verify", 1.5}}).find("option 'verify' has the wrong type"), std::string::npos);
  EXPECT_NE(message(json{{"stitch", 1}}).find("option 'stitch' has the wrong type"), std::string::npos);
  EXPECT_NE(message(json{{"device", "tpu"}}).find("option 'device' is not a device"), std::string::npos);
  EXPECT_NE(message(json::array()).find("options must be a JSON object"), std::string::npos);
  EXPECT_NE(message(json{{"device", "mps"}}).find("a device autograph does not plan for"), std::string::npos);
  EXPECT_NE(message(json{{"method", "fastest"}}).find("option 'method' is \"fastest\"; use one of autograph, sequential"),
            std::string::npos);
  EXPECT_NE(message(json{{"cost", "guess"}}).find("use one of analytical, measured"), std::string::npos);
  EXPECT_NE(message(json{{"max_streams", 0}}).find("option 'max_streams' is 0; expected 1..64"), std::string::npos);
  EXPECT_NE(message(json{{"verify", -1}}).find("expected 0..16"), std::string::npos);
  EXPECT_NE(message(json{{"alpha", -0.5}}).find("option 'alpha' is -0.5; expected at least 0"), std::string::npos);
  EXPECT_NE(message(json{{"shapes", "4x3xa"}}).find("option 'shapes' is not a list of shapes: \"4x3xa\""),
            std::string::npos);
  EXPECT_NE(message(json{{"shapes", "4x-3"}}).find("not a list of shapes"), std::string::npos);
}

TEST(OptimizeOptionsFromJson, ShapesReadTheirTextForm) {
  using Shapes = std::vector<std::vector<std::vector<int64_t>>>;
  EXPECT_EQ(autograph::OptimizeOptionsFromJson(json{{"shapes", "1x16,1x16;8x512,8x512"}}).shapes,
            (Shapes{{{1, 16}, {1, 16}}, {{8, 512}, {8, 512}}}));
  EXPECT_EQ(autograph::OptimizeOptionsFromJson(json{{"shapes", ""}}).shapes, Shapes{});
  EXPECT_NO_THROW(autograph::CheckOptimizeOptions(autograph::OptimizeOptions{}));  // "" round-trips
}

TEST(OptimizeOptionsFromJson, AcceptsCudaWithAnIndexOnAnyMachine) {
  // Parsing does not need the device to exist: planning on it does (and says so).
  EXPECT_EQ(autograph::OptimizeOptionsFromJson(json{{"device", "cuda:1"}}).executor.device, c10::Device("cuda:1"));
  EXPECT_EQ(autograph::OptimizeOptionsFromJson(json{{"cost", ""}}).cost.model, "");
}

TEST(OptimizeOptionTable, JsonListsEveryOptionWithTheStructsDefault) {
  const json table = autograph::OptimizeOptionTableJson();
  ASSERT_EQ(table.size(), autograph::OptimizeOptionKeys().size());
  const autograph::OptimizeOptions defaults;
  for (const json& entry : table) {
    SCOPED_TRACE(entry.dump());
    for (const char* key : {"name", "type", "default", "applies", "help"}) EXPECT_TRUE(entry.contains(key));
    EXPECT_FALSE(entry["help"].get<std::string>().empty());
    // Setting an option to its listed default leaves every option as it was.
    const autograph::OptimizeOptions again = autograph::OptimizeOptionsFromJson(
        json{{entry["name"].get<std::string>(), entry["default"]}});
    for (const autograph::OptionSpec& spec : autograph::OptimizeOptionTable())
      EXPECT_EQ(spec.get(again), spec.get(defaults)) << spec.name;
  }
  auto find = [&](const std::string& name) {
    for (const json& e : table)
      if (e["name"] == name) return e;
    return json();
  };
  EXPECT_EQ(find("method")["default"], "autograph");
  EXPECT_EQ(find("verify")["default"], defaults.search.verify);
  EXPECT_EQ(find("verify")["max"], 16.0);
  EXPECT_EQ(find("substitutions")["default"], true);
  EXPECT_EQ(find("device")["default_note"], "the example inputs' device");
  EXPECT_EQ(find("alpha")["type"], "float");
  EXPECT_EQ(find("block_states")["type"], "int");
}

TEST(ResolveOptions, ChecksAStructFilledInCppBeforeAnyWorkAndResolvesTheDefaultsOnce) {
  torch::jit::Module module("m");
  module.define("def forward(self, x):\n  return x + 1\n");
  autograph::OptimizeOptions options;  // no example inputs either: the option is refused first
  options.search.max_streams = 0;
  try {
    autograph::optimize(module, options);
    ADD_FAILURE() << "max_streams = 0 was accepted";
  } catch (const autograph::InputError& e) {
    EXPECT_NE(std::string(e.what()).find("option 'max_streams' is 0; expected 1..64"), std::string::npos) << e.what();
  }
  options.search.max_streams = 2;
  options.executor.device = c10::Device("cuda:3");
  options.search.method = "fastest";
  EXPECT_THROW(autograph::substitute(module, options), autograph::InputError);

  const autograph::OptimizeOptions resolved = autograph::ResolveOptions(autograph::OptimizeOptions{}, autograph::ModelPath::TorchScript);
  EXPECT_EQ(resolved.cost.model, "analytical");  // CPU: the analytical model ranks
  EXPECT_FALSE(resolved.cost.device_model.empty());
  EXPECT_FALSE(resolved.executor.cuda_graph);  // CUDA Graphs only on CUDA
}

TEST(ResolveOptions, EveryMethodTheTableListsIsAMethod) {
  autograph::OptimizeOptions options;
  for (const autograph::OptionSpec& spec : autograph::OptimizeOptionTable()) {
    if (spec.name != "method") continue;
    for (const std::string& name : spec.choices) {
      options.search.method = name;
      const autograph::Method method = autograph::MethodOf(options);  // no throw for a listed name
      EXPECT_EQ(autograph::Searches(method), name == "ios" || name == "autograph") << name;
    }
  }
  options.search.method = "fastest";
  EXPECT_THROW(autograph::MethodOf(options), autograph::InputError);
}

// An option whose `applies` names one path is refused on the other, set by name (even at its default
// value) or, in a struct, set apart from its default; a device it names is not checked (ignored there).
TEST(OptionPaths, WhatAppliesToOnePathIsRefusedOnTheOther) {
  using autograph::ModelPath;
  auto spec = [](const std::string& name) {
    for (const autograph::OptionSpec& s : autograph::OptimizeOptionTable())
      if (s.name == name) return s;
    ADD_FAILURE() << "no option " << name;
    return autograph::OptionSpec{};
  };
  for (const char* name : {"openvino", "inductor"}) {
    EXPECT_TRUE(autograph::AppliesOn(spec(name), ModelPath::Export)) << name;
    EXPECT_FALSE(autograph::AppliesOn(spec(name), ModelPath::TorchScript)) << name;
  }
  for (const char* name : {"plan_new_shapes", "substitutions", "stitch", "fold_conv_relu", "prepack_onednn"}) {
    EXPECT_TRUE(autograph::AppliesOn(spec(name), ModelPath::TorchScript)) << name;
    EXPECT_FALSE(autograph::AppliesOn(spec(name), ModelPath::Export)) << name;
  }
  for (const char* name : {"method", "max_streams", "cuda_graph", "merge", "check_rewrites", "cost_cache"}) {
    EXPECT_TRUE(autograph::AppliesOn(spec(name), ModelPath::TorchScript)) << name;
    EXPECT_TRUE(autograph::AppliesOn(spec(name), ModelPath::Export)) << name;
  }

  auto message = [](const std::vector<std::string>& set, ModelPath path) -> std::string {
    try {
      autograph::CheckOptionsApplyOn(set, path);
    } catch (const autograph::InputError& e) {
      return e.what();
    }
    return "";
  };
  const std::string refused = message({"max_streams", "openvino"}, ModelPath::TorchScript);
  EXPECT_NE(refused.find("option 'openvino' applies to the export path (\"export path, cpu\"), not the TorchScript "
                         "path this model takes: drop it here"),
            std::string::npos)
      << refused;
  EXPECT_NE(refused.find("ir=\"export\""), std::string::npos) << refused;
  EXPECT_NE(message({"stitch"}, ModelPath::Export).find("option 'stitch' applies to the TorchScript path"),
            std::string::npos);
  EXPECT_EQ(message({"max_streams", "cuda_graph", "shapes", "unknown"}, ModelPath::Export), "");

  // By name: the keys given, whatever their value.
  EXPECT_EQ(autograph::OptionKeysOf(json{{"openvino", true}, {"verify", 1}}),
            (std::vector<std::string>{"openvino", "verify"}));
  EXPECT_THROW(autograph::CheckOptionsApplyOn(autograph::OptionKeysOf(json{{"openvino", true}}), ModelPath::TorchScript),
               autograph::InputError);
  // In a struct: what differs from the defaults (substitutions named by its rewrites).
  autograph::OptimizeOptions options;
  EXPECT_TRUE(autograph::OptionsSetIn(options).empty());
  EXPECT_NO_THROW(autograph::ResolveOptions(options, ModelPath::Export));
  options.substitutions.stitch = false;
  options.substitutions.fuse_attention = false;
  EXPECT_EQ(autograph::OptionsSetIn(options), (std::vector<std::string>{"fuse_attention", "stitch"}));
  EXPECT_NO_THROW(autograph::ResolveOptions(options, ModelPath::TorchScript));
  EXPECT_THROW(autograph::ResolveOptions(options, ModelPath::Export), autograph::InputError);
  options = autograph::OptimizeOptions{};
  options.substitutions.openvino = false;
  options.executor.cuda_graph = false;  // a cuda option on the CPU: ignored, as the table says
  EXPECT_NO_THROW(autograph::ResolveOptions(options, ModelPath::Export));

  // optimize and substitute (the TorchScript path) refuse it before any work.
  torch::jit::Module module("m");
  module.define("def forward(self, x):\n  return x + 1\n");
  options.example_inputs = {torch::randn({2})};
  try {
    autograph::optimize(module, options);
    ADD_FAILURE() << "openvino = false was accepted on the TorchScript path";
  } catch (const autograph::InputError& e) {
    EXPECT_NE(std::string(e.what()).find("option 'openvino' applies to the export path"), std::string::npos) << e.what();
  }
  EXPECT_THROW(autograph::substitute(module, options), autograph::InputError);
}

}  // namespace
