#include "search/cost/analytical_cost_model.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cstdio>
#include <filesystem>
#include <thread>

#include <unistd.h>

#include "search/cost/device_model.h"

namespace {

using autograph::AnalyticalCostModel;
using autograph::AnalyticalCostOptions;
using autograph::DeviceModel;
using autograph::OpGraph;
using autograph::OpKind;
using autograph::OpNode;
using autograph::Stage;
using autograph::StageStrategy;
using autograph::TensorMeta;
using Groups = std::vector<std::vector<int>>;

constexpr auto kFloat = c10::ScalarType::Float;

TensorMeta Meta(std::vector<int64_t> shape, c10::ScalarType dtype = kFloat) { return TensorMeta{std::move(shape), dtype}; }

// conv2d, stride 1, "same" padding: n x cin x h x w -> n x cout x h x w with a k x k kernel.
OpNode Conv(int64_t n, int64_t cin, int64_t cout, int64_t hw, int64_t k, c10::ScalarType dtype = kFloat) {
  OpNode node;
  node.op = "aten::conv2d";
  node.kind = OpKind::ComputeBound;
  node.inputs = {Meta({n, cin, hw, hw}, dtype), Meta({cout, cin, k, k}, dtype)};
  node.outputs = {Meta({n, cout, hw, hw}, dtype)};
  node.flops = 2.0 * static_cast<double>(node.outputs[0].numel() * cin * k * k);
  node.weight_bytes = node.inputs[1].nbytes();
  node.bytes_read = node.inputs[0].nbytes() + node.weight_bytes;
  node.bytes_written = node.outputs[0].nbytes();
  return node;
}

// m x k times k x n, the right operand a frozen weight.
OpNode Gemm(int64_t m, int64_t k, int64_t n) {
  OpNode node;
  node.op = "aten::mm";
  node.kind = OpKind::ComputeBound;
  node.inputs = {Meta({m, k}), Meta({k, n})};
  node.outputs = {Meta({m, n})};
  node.flops = 2.0 * static_cast<double>(m * n * k);
  node.weight_bytes = node.inputs[1].nbytes();
  node.bytes_read = node.inputs[0].nbytes() + node.weight_bytes;
  node.bytes_written = node.outputs[0].nbytes();
  return node;
}

OpNode Add(std::vector<int64_t> shape) {
  OpNode node;
  node.op = "aten::add";
  node.kind = OpKind::MemoryBound;
  node.inputs = {Meta(shape), Meta(shape)};
  node.outputs = {Meta(shape)};
  node.flops = static_cast<double>(node.outputs[0].numel());
  node.bytes_read = 2 * node.inputs[0].nbytes();
  node.bytes_written = node.outputs[0].nbytes();
  return node;
}

OpNode View(std::vector<int64_t> shape) {
  OpNode node;
  node.op = "aten::view";
  node.kind = OpKind::View;
  node.inputs = {Meta(shape)};
  node.outputs = {Meta(shape)};
  return node;
}

OpGraph GraphOf(const std::vector<OpNode>& nodes) {
  OpGraph g;
  for (const OpNode& n : nodes) g.AddNode(n);
  return g;
}

double OneOpMs(AnalyticalCostModel& model, const OpNode& node) {
  OpGraph g = GraphOf({node});
  return model.OperatorMs(g, 0);
}

Stage Concurrent(Groups groups) { return Stage{StageStrategy::Concurrent, std::move(groups)}; }
Stage Merged(Groups groups) { return Stage{StageStrategy::Merge, std::move(groups)}; }

// Stages that run the ops of `groups` one per stage, in order: what running them in sequence costs.
double SequenceMs(AnalyticalCostModel& model, const OpGraph& g, const Groups& groups) {
  double ms = 0;
  for (const auto& group : groups)
    for (int op : group) ms += model.StageMs(g, Concurrent({{op}}));
  return ms;
}

const std::vector<std::string> kGpus = {"h100", "a100", "v100"};

// The 3x3 conv of ResNet's first stage at batch 1: 1x64x56x56, 64 -> 64.
OpNode SmallConv() { return Conv(1, 64, 64, 56, 3); }

TEST(AnalyticalCostModel, SmallConvHasPlausibleMagnitude) {
  // 0.23 GFLOP at batch 1; cuDNN takes tens of microseconds for it on these GPUs.
  for (const std::string& name : kGpus) {
    AnalyticalCostModel model(DeviceModel::ByName(name));
    const double ms = OneOpMs(model, SmallConv());
    EXPECT_GT(ms, 0.01) << name;
    EXPECT_LT(ms, 0.2) << name;
  }
}

TEST(AnalyticalCostModel, MonotoneInFlops) {
  for (const std::string& name : kGpus) {
    AnalyticalCostModel model(DeviceModel::ByName(name));
    double previous = 0;
    for (double scale : {0.0, 0.5, 1.0, 2.0, 4.0, 16.0}) {
      OpNode conv = SmallConv();
      conv.flops *= scale;
      const double ms = OneOpMs(model, conv);
      EXPECT_GE(ms, previous) << name << " scale " << scale;
      if (scale >= 1.0) {
        EXPECT_GT(ms, previous) << name << " scale " << scale << ": the conv is compute-bound";
      }
      previous = ms;
    }
  }
}

TEST(AnalyticalCostModel, MonotoneInBytes) {
  for (const std::string& name : kGpus) {
    AnalyticalCostModel model(DeviceModel::ByName(name));
    // Same shapes, more bytes: never cheaper; strictly dearer once memory dominates.
    double previous = 0;
    for (int64_t extra : {int64_t{0}, int64_t{1} << 20, int64_t{1} << 24, int64_t{1} << 28}) {
      OpNode add = Add({1, 64, 56, 56});
      add.bytes_read += extra;
      const double ms = OneOpMs(model, add);
      EXPECT_GE(ms, previous) << name;
      if (extra >= (int64_t{1} << 24)) {
        EXPECT_GT(ms, previous) << name << " extra " << extra;
      }
      previous = ms;
    }
    // Larger tensors, larger cost.
    previous = 0;
    for (int64_t hw : {7, 28, 112, 448, 1792}) {
      const double ms = OneOpMs(model, Add({1, 64, hw, hw}));
      EXPECT_GT(ms, previous) << name << " hw " << hw;
      previous = ms;
    }
  }
}

TEST(AnalyticalCostModel, ViewsCostNothing) {
  AnalyticalCostModel model(DeviceModel::ByName("h100"));
  OpGraph g = GraphOf({View({1, 64, 56, 56}), SmallConv(), View({1, 64, 56, 56})});
  EXPECT_EQ(model.OperatorMs(g, 0), 0.0);
  EXPECT_EQ(model.StageMs(g, Concurrent({{0}, {2}})), 0.0);
  EXPECT_EQ(model.StageMs(g, Merged({{0}, {2}})), 0.0);
  // A view beside or inside a group adds neither time nor a stream to synchronize.
  const double conv = model.StageMs(g, Concurrent({{1}}));
  EXPECT_DOUBLE_EQ(model.StageMs(g, Concurrent({{0, 1}})), conv);
  EXPECT_DOUBLE_EQ(model.StageMs(g, Concurrent({{1}, {0, 2}})), conv);
}

TEST(AnalyticalCostModel, ControlFlowCostsOneLaunch) {
  for (const char* name : {"h100", "cpu"}) {
    const DeviceModel device = DeviceModel::ByName(name);
    AnalyticalCostModel model(device);
    OpNode loop;
    loop.op = "prim::Loop";
    loop.kind = OpKind::ControlFlow;
    loop.bytes_read = 1 << 20;
    EXPECT_DOUBLE_EQ(OneOpMs(model, loop), device.launch_us / 1e3) << name;
  }
}

TEST(AnalyticalCostModel, DependsOnShapesAndDevice) {
  AnalyticalCostModel h100(DeviceModel::ByName("h100"));
  AnalyticalCostModel cpu(DeviceModel::ByName("cpu"));
  const double small = OneOpMs(h100, SmallConv());
  EXPECT_NE(small, OneOpMs(h100, Conv(1, 64, 64, 28, 3)));
  EXPECT_NE(small, OneOpMs(h100, Conv(1, 64, 64, 56, 5)));
  // Twice the output channels fill twice the SMs in the same time while they fit in one wave.
  EXPECT_DOUBLE_EQ(small, OneOpMs(h100, Conv(1, 64, 128, 56, 3)));
  EXPECT_GT(OneOpMs(h100, Conv(1, 64, 256, 56, 3)), small);
  EXPECT_NE(small, OneOpMs(h100, Add({1, 64, 56, 56})));
  EXPECT_GT(OneOpMs(cpu, SmallConv()), 10 * small);
}

TEST(AnalyticalCostModel, LargerDeviceNeverSlower) {
  AnalyticalCostModel h100(DeviceModel::ByName("h100"));
  AnalyticalCostModel v100(DeviceModel::ByName("v100"));
  const std::vector<OpNode> ops = {SmallConv(),          Conv(1, 3, 64, 224, 7),  Conv(32, 256, 256, 14, 3),
                                   Conv(1, 64, 64, 56, 3, c10::ScalarType::Half), Gemm(1, 768, 768),
                                   Gemm(128, 768, 3072), Gemm(4096, 4096, 4096), Add({1, 64, 56, 56}),
                                   Add({1, 16}),         Add({64, 1024, 1024})};
  for (size_t i = 0; i < ops.size(); ++i) {
    const double fast = OneOpMs(h100, ops[i]);
    const double slow = OneOpMs(v100, ops[i]);
    EXPECT_LE(fast, slow) << "op " << i;
  }
  // Stages too.
  OpGraph g = GraphOf({SmallConv(), SmallConv(), Add({1, 64, 56, 56}), Gemm(128, 768, 3072)});
  for (const Stage& stage : {Concurrent({{0}, {1}}), Concurrent({{0, 2}, {1}, {3}}), Merged({{0}, {1}})})
    EXPECT_LE(h100.StageMs(g, stage), v100.StageMs(g, stage));
}

TEST(AnalyticalCostModel, SmallKernelsDoNotFillTheDevice) {
  // At batch 1 the conv occupies a fraction of the SMs, so batch 8 costs far less than 8 times as much.
  AnalyticalCostModel model(DeviceModel::ByName("h100"));
  const double batch1 = OneOpMs(model, SmallConv());
  const double batch8 = OneOpMs(model, Conv(8, 64, 64, 56, 3));
  EXPECT_LT(batch8, 4 * batch1);
  // A huge GEMM fills it: twice the work, twice the kernel time.
  const double big = OneOpMs(model, Gemm(4096, 4096, 4096));
  const double bigger = OneOpMs(model, Gemm(8192, 4096, 4096));
  const double launch = model.device().launch_us / 1e3;
  EXPECT_NEAR((bigger - launch) / (big - launch), 2.0, 1e-9);
}

TEST(AnalyticalCostModel, BatchOneGemvIsBoundByItsWeights) {
  // 1x4096 times 4096x4096: 64 MiB of FP32 weights read once, 33 MFLOP. GEMV kernels stream the
  // weights at close to full bandwidth although their output is a single row of tiles.
  for (const std::string& name : kGpus) {
    const DeviceModel device = DeviceModel::ByName(name);
    AnalyticalCostModel model(device);
    const OpNode gemv = Gemm(1, 4096, 4096);
    const double full_bandwidth_ms =
        1e3 * static_cast<double>(gemv.bytes_read + gemv.bytes_written) / (device.memory_gbps * 1e9);
    const double kernel_ms = OneOpMs(model, gemv) - device.launch_us / 1e3;
    EXPECT_GT(kernel_ms, full_bandwidth_ms) << name;
    EXPECT_LT(kernel_ms, 1.5 * full_bandwidth_ms) << name;
  }
}

TEST(AnalyticalCostModel, FewBlocksDrawPartOfTheBandwidth) {
  // Four tiles of output, 16 MiB of weights: how much bandwidth four SMs can draw decides the time.
  const OpNode narrow = Gemm(1, 16384, 256);
  double previous = 1e9;
  for (double share : {1.0, 4.0, 16.0, 64.0}) {
    DeviceModel device = DeviceModel::ByName("h100");
    device.sm_bandwidth_share = share;
    AnalyticalCostModel model(device);
    const double ms = OneOpMs(model, narrow);
    EXPECT_LT(ms, previous) << share;
    previous = ms;
  }
}

TEST(AnalyticalCostModel, Tf32OnlyWhenAllowedAndAvailable) {
  AnalyticalCostModel strict(DeviceModel::ByName("h100"));
  AnalyticalCostModel tf32(DeviceModel::ByName("h100"), AnalyticalCostOptions{true});
  EXPECT_LT(OneOpMs(tf32, Gemm(4096, 4096, 4096)), OneOpMs(strict, Gemm(4096, 4096, 4096)) / 3);
  AnalyticalCostModel v100_tf32(DeviceModel::ByName("v100"), AnalyticalCostOptions{true});
  AnalyticalCostModel v100(DeviceModel::ByName("v100"));
  EXPECT_DOUBLE_EQ(OneOpMs(v100_tf32, Gemm(4096, 4096, 4096)), OneOpMs(v100, Gemm(4096, 4096, 4096)));
}

TEST(AnalyticalCostStage, OneGroupIsTheSumOfItsOperators) {
  AnalyticalCostModel model(DeviceModel::ByName("a100"));
  OpGraph g = GraphOf({SmallConv(), Add({1, 64, 56, 56}), View({1, 64, 56, 56}), Gemm(64, 512, 512)});
  double sum = 0;
  for (int op = 0; op < g.size(); ++op) sum += model.OperatorMs(g, op);
  EXPECT_NEAR(model.StageMs(g, Concurrent({{0, 1, 2, 3}})), sum, 1e-12);
  EXPECT_NEAR(model.ScheduleMs(g, autograph::Schedule{{Concurrent({{0, 1}}), Concurrent({{2, 3}})}}), sum, 1e-12);
}

TEST(AnalyticalCostStage, SmallConvsOverlap) {
  for (const std::string& name : kGpus) {
    AnalyticalCostModel model(DeviceModel::ByName(name));
    OpGraph g = GraphOf({SmallConv(), Conv(1, 64, 32, 56, 3)});
    const double concurrent = model.StageMs(g, Concurrent({{0}, {1}}));
    const double sequence = SequenceMs(model, g, {{0}, {1}});
    const double longest = std::max(model.OperatorMs(g, 0), model.OperatorMs(g, 1));
    EXPECT_LT(concurrent, 0.9 * sequence) << name;
    EXPECT_GE(concurrent, longest) << name;
  }
}

TEST(AnalyticalCostStage, DeviceFillingGemmsDoNotOverlap) {
  for (const std::string& name : kGpus) {
    AnalyticalCostModel model(DeviceModel::ByName(name));
    OpGraph g = GraphOf({Gemm(4096, 4096, 4096), Gemm(4096, 4096, 4096)});
    const double concurrent = model.StageMs(g, Concurrent({{0}, {1}}));
    const double sequence = SequenceMs(model, g, {{0}, {1}});
    EXPECT_GE(concurrent, 0.9 * sequence) << name;
    EXPECT_LE(concurrent, 1.1 * sequence) << name;
  }
}

TEST(AnalyticalCostStage, BandwidthIsShared) {
  // Two large adds each saturate DRAM: side by side they take as long as one after the other.
  AnalyticalCostModel model(DeviceModel::ByName("h100"));
  OpGraph g = GraphOf({Add({64, 1024, 1024}), Add({64, 1024, 1024})});
  EXPECT_GE(model.StageMs(g, Concurrent({{0}, {1}})), 0.9 * SequenceMs(model, g, {{0}, {1}}));
}

TEST(AnalyticalCostStage, LaunchesAreIssuedByOneThread) {
  // Tiny kernels gain nothing from streams: every launch still goes through the one host thread.
  AnalyticalCostModel model(DeviceModel::ByName("h100"));
  std::vector<OpNode> nodes(20, Add({1, 16}));
  OpGraph g = GraphOf(nodes);
  Groups two_groups(2);
  for (int op = 0; op < 20; ++op) two_groups[op % 2].push_back(op);
  EXPECT_GE(model.StageMs(g, Concurrent(two_groups)), 20 * model.device().launch_us / 1e3);
}

TEST(AnalyticalCostStage, ConcurrencyLimitSerializesGroups) {
  DeviceModel one_lane = DeviceModel::ByName("h100");
  one_lane.max_concurrent_kernels = 1;
  AnalyticalCostModel model(one_lane);
  OpGraph g = GraphOf({SmallConv(), SmallConv(), SmallConv()});
  EXPECT_GE(model.StageMs(g, Concurrent({{0}, {1}, {2}})), SequenceMs(model, g, {{0}, {1}, {2}}));
}

TEST(AnalyticalCostStage, SyncCostGrowsWithGroups) {
  DeviceModel device = DeviceModel::ByName("h100");
  AnalyticalCostModel cheap_sync(device);
  const double extra_sync_ms = 9 * device.sync_us / 1e3;
  device.sync_us *= 10;
  AnalyticalCostModel dear_sync(device);
  OpGraph g = GraphOf({SmallConv(), SmallConv(), SmallConv()});
  for (int groups : {1, 2, 3}) {
    Groups split(groups);
    for (int op = 0; op < 3; ++op) split[op % groups].push_back(op);
    const double difference = dear_sync.StageMs(g, Concurrent(split)) - cheap_sync.StageMs(g, Concurrent(split));
    EXPECT_NEAR(difference, extra_sync_ms * (groups - 1), 1e-12) << groups;
  }
}

TEST(AnalyticalCostStage, MergedSmallConvsCostLessThanTheirSum) {
  for (const std::string& name : kGpus) {
    AnalyticalCostModel model(DeviceModel::ByName(name));
    OpGraph g = GraphOf({SmallConv(), SmallConv()});
    const double merged = model.StageMs(g, Merged({{0}, {1}}));
    const double sum = model.OperatorMs(g, 0) + model.OperatorMs(g, 1);
    EXPECT_LT(merged, sum) << name;
    // One launch and no stream to join: cheaper than running the two side by side.
    EXPECT_LT(merged, model.StageMs(g, Concurrent({{0}, {1}}))) << name;
    // Both convs' work: never faster than one of them (as fast where the pair still fits in one wave).
    EXPECT_GE(merged, model.OperatorMs(g, 0) * (1 - 1e-12)) << name;
  }
}

TEST(AnalyticalCostStage, MergeReadsTheSharedInputOnce) {
  // Memory-bound siblings: merging saves the second read of the input, not only a launch.
  AnalyticalCostModel model(DeviceModel::ByName("h100"));
  OpNode a = Conv(1, 1024, 1, 256, 1);  // 1x1 conv to one channel: reads 256 MiB, writes little
  OpGraph same_input = GraphOf({a, a});
  OpNode b = Conv(1, 1024, 1, 256, 1);
  b.inputs[0].shape = {1, 1024, 128, 512};  // same bytes, a different input
  OpGraph other_input = GraphOf({a, b});
  const double shared = model.StageMs(same_input, Merged({{0}, {1}}));
  const double separate = model.StageMs(other_input, Merged({{0}, {1}}));
  EXPECT_LT(shared, 0.6 * separate);
}

TEST(AnalyticalCostModel, CostsFollowEditedNodes) {
  AnalyticalCostModel model(DeviceModel::ByName("h100"));
  OpGraph g = GraphOf({SmallConv()});
  const double before = model.OperatorMs(g, 0);
  g.node(0).flops *= 4;
  EXPECT_GT(model.OperatorMs(g, 0), before);
  // A graph built at the address of a destroyed one gets its own costs.
  double previous = 0;
  for (int64_t cin : {16, 32, 64, 128}) {
    OpGraph fresh = GraphOf({Conv(1, cin, 64, 56, 3)});
    const double ms = model.OperatorMs(fresh, 0);
    EXPECT_GT(ms, previous) << cin;
    previous = ms;
  }
}

TEST(AnalyticalCostModel, RejectsDevicesItCannotUse) {
  EXPECT_THROW(AnalyticalCostModel(DeviceModel{}), autograph::Error);  // no rates at all
  DeviceModel device = DeviceModel::ByName("h100");
  device.memory_efficiency = 1.2;
  try {
    AnalyticalCostModel model(device);
    FAIL() << "expected autograph::Error";
  } catch (const autograph::Error& e) {
    EXPECT_NE(std::string(e.what()).find("memory_efficiency"), std::string::npos) << e.what();
  }
}

TEST(AnalyticalCostModel, NameSaysDevice) {
  EXPECT_EQ(AnalyticalCostModel(DeviceModel::ByName("v100")).name(), "analytical:v100");
}

DeviceModel Calibrated() {
  DeviceModel d = DeviceModel::ByName("a100");
  d.name = "a100-calibrated";
  d.gemm_efficiency = 0.63;
  d.vector_efficiency = 0.41;
  d.memory_efficiency = 0.87;
  d.sm_bandwidth_share = 3.5;
  d.launch_us = 3.25;
  d.sync_us = 1.5;
  d.stitch_overhead_us = 4.5;
  d.dispatch_per_group = true;
  d.gemm_tile = 128;
  d.elementwise_block_elements = 512;
  d.max_concurrent_kernels = 32;
  return d;
}

void ExpectSameDevice(const DeviceModel& a, const DeviceModel& b) {
  EXPECT_EQ(a.name, b.name);
  EXPECT_EQ(a.sms, b.sms);
  EXPECT_EQ(a.fp32_tflops, b.fp32_tflops);
  EXPECT_EQ(a.tf32_tflops, b.tf32_tflops);
  EXPECT_EQ(a.fp16_tflops, b.fp16_tflops);
  EXPECT_EQ(a.memory_gbps, b.memory_gbps);
  EXPECT_EQ(a.launch_us, b.launch_us);
  EXPECT_EQ(a.sync_us, b.sync_us);
  EXPECT_EQ(a.max_concurrent_kernels, b.max_concurrent_kernels);
  EXPECT_EQ(a.gemm_efficiency, b.gemm_efficiency);
  EXPECT_EQ(a.vector_efficiency, b.vector_efficiency);
  EXPECT_EQ(a.memory_efficiency, b.memory_efficiency);
  EXPECT_EQ(a.sm_bandwidth_share, b.sm_bandwidth_share);
  EXPECT_EQ(a.stitch_overhead_us, b.stitch_overhead_us);
  EXPECT_EQ(a.dispatch_per_group, b.dispatch_per_group);
  EXPECT_EQ(a.gemm_tile, b.gemm_tile);
  EXPECT_EQ(a.elementwise_block_elements, b.elementwise_block_elements);
}

// A stitched kernel costs its bytes like any memory-bound operator, plus the device's per-call
// stitch overhead; other operators do not pay it.
TEST(AnalyticalCostModel, StitchedKernelsPayTheStitchOverhead) {
  OpNode stitched = Add({1, 64, 28, 28});
  stitched.op = "autograph::stitched";
  OpGraph g = GraphOf({Add({1, 64, 28, 28}), stitched});
  DeviceModel device = DeviceModel::ByName("cpu");
  device.stitch_overhead_us = 0;
  AnalyticalCostModel none(device);
  EXPECT_DOUBLE_EQ(none.OperatorMs(g, 0), none.OperatorMs(g, 1));
  device.stitch_overhead_us = 40;
  AnalyticalCostModel some(device);
  EXPECT_DOUBLE_EQ(some.OperatorMs(g, 0), none.OperatorMs(g, 0));
  EXPECT_NEAR(some.OperatorMs(g, 1) - none.OperatorMs(g, 1), 0.040, 1e-12);
}

// Two groups of small operators: on a GPU one host thread launches both groups' kernels, so the
// second group starts after the first group's launches; on a CPU each worker dispatches its own.
TEST(AnalyticalCostModel, PerGroupDispatchOverlapsTheGroupsLaunches) {
  OpGraph g = GraphOf({Add({1, 8}), Add({1, 8}), Add({1, 8}), Add({1, 8})});
  Stage stage;
  stage.groups = {{0, 1}, {2, 3}};
  DeviceModel device = DeviceModel::ByName("cpu");
  device.sync_us = 0;
  device.launch_us = 50;  // dispatch dominates: the adds themselves take nanoseconds
  device.dispatch_per_group = false;
  const double shared = AnalyticalCostModel(device).StageMs(g, stage);
  device.dispatch_per_group = true;
  const double own = AnalyticalCostModel(device).StageMs(g, stage);
  EXPECT_NEAR(shared, 0.200, 0.005);  // one thread launches all four, the second group's last
  EXPECT_NEAR(own, 0.100, 0.005);     // each group: its own two dispatches
  EXPECT_TRUE(DeviceModel::ByName("cpu").dispatch_per_group);
  EXPECT_FALSE(DeviceModel::ByName("h100").dispatch_per_group);
}

TEST(DeviceModel, JsonRoundTrip) {
  const DeviceModel original = Calibrated();
  const nlohmann::json json = autograph::DeviceModelToJson(original);
  EXPECT_EQ(json.at("version"), 2);
  EXPECT_EQ(json.at("efficiency").at("gemm"), 0.63);
  ExpectSameDevice(autograph::DeviceModelFromJson(json), original);
  ExpectSameDevice(autograph::DeviceModelFromJson(nlohmann::json::parse(json.dump())), original);
  // A version 1 file (before stitch_overhead_us) still loads, with no stitch overhead.
  nlohmann::json v1 = json;
  v1["version"] = 1;
  v1.erase("stitch_overhead_us");
  v1.erase("dispatch_per_group");
  DeviceModel expected = original;
  expected.stitch_overhead_us = 0;
  expected.dispatch_per_group = false;
  ExpectSameDevice(autograph::DeviceModelFromJson(v1), expected);
}

TEST(DeviceModel, FileRoundTrip) {
  const auto path = std::filesystem::temp_directory_path() /
                    ("autograph_device_model_" + std::to_string(::getpid()) + ".json");
  autograph::SaveDeviceModel(Calibrated(), path.string());
  const DeviceModel loaded = autograph::LoadDeviceModel(path.string());
  std::filesystem::remove(path);
  ExpectSameDevice(loaded, Calibrated());
  // The calibrated factors change predictions.
  OpGraph g = GraphOf({SmallConv()});
  AnalyticalCostModel preset(DeviceModel::ByName("a100"));
  AnalyticalCostModel calibrated(loaded);
  EXPECT_NE(preset.OperatorMs(g, 0), calibrated.OperatorMs(g, 0));
}

void ExpectJsonError(const nlohmann::json& json, const std::string& needle) {
  try {
    autograph::DeviceModelFromJson(json);
    ADD_FAILURE() << "accepted " << json.dump();
  } catch (const autograph::Error& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}

TEST(DeviceModel, JsonRejectsMalformed) {
  const nlohmann::json good = autograph::DeviceModelToJson(Calibrated());
  ExpectJsonError(nlohmann::json::array(), "expected an object");
  auto j = good;
  j.erase("memory_gbps");
  ExpectJsonError(j, "memory_gbps");
  j = good;
  j["memory_gbs"] = 1;
  ExpectJsonError(j, "memory_gbs");
  j = good;
  j["efficiency"]["gemm"] = 1.5;
  ExpectJsonError(j, "efficiency.gemm");
  j = good;
  j["efficiency"]["gemmm"] = 0.5;
  ExpectJsonError(j, "gemmm");
  j = good;
  j["sms"] = 13.5;
  ExpectJsonError(j, "sms");
  j = good;
  j["fp32_tflops"] = "fast";
  ExpectJsonError(j, "fp32_tflops");
  j = good;
  j["launch_us"] = -1;
  ExpectJsonError(j, "launch_us");
  j = good;
  j["version"] = 3;
  ExpectJsonError(j, "version");
  j = good;
  j["stitch_overhead_us"] = -2;
  ExpectJsonError(j, "stitch_overhead_us");
  j = good;
  j["version"] = 1;  // version 1 has no stitch_overhead_us nor dispatch_per_group
  ExpectJsonError(j, "unknown key");
  j = good;
  j["dispatch_per_group"] = 1;
  ExpectJsonError(j, "dispatch_per_group");
  j = good;
  j["granularity"].erase("gemm_tile");
  ExpectJsonError(j, "gemm_tile");
}

TEST(DeviceModel, LoadNamesAMissingFile) {
  try {
    autograph::LoadDeviceModel("/nonexistent/dev.json");
    FAIL() << "expected autograph::Error";
  } catch (const autograph::Error& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent/dev.json"), std::string::npos) << e.what();
  }
}

}  // namespace

