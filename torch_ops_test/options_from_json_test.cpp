// OptimizeOptionsFromJson: the Python option names onto OptimizeOptions, with typed errors.
#include "api/options_from_json.h"

#include <gtest/gtest.h>

#include <algorithm>

#include <nlohmann/json.hpp>

#include "autograph/error.h"

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
}

TEST(OptimizeOptionsFromJson, EveryKeyIsKnownAndTheTableHasNoDuplicates) {
  std::vector<std::string> keys = autograph::OptimizeOptionKeys();
  EXPECT_EQ(keys.size(), 28u);
  std::sort(keys.begin(), keys.end());
  EXPECT_EQ(std::adjacent_find(keys.begin(), keys.end()), keys.end());
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
}

}  // namespace
