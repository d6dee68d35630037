#include "search/cost/device_model.h"

#include <gtest/gtest.h>

#include <string>

namespace {

using autograph::DeviceModel;

TEST(DeviceModel, PresetsCarryPublishedFigures) {
  const DeviceModel h100 = DeviceModel::ByName("h100");
  EXPECT_EQ(h100.sms, 132);
  EXPECT_NEAR(h100.fp32_tflops, 67, 0.5);
  EXPECT_NEAR(h100.tf32_tflops, 495, 1);
  EXPECT_NEAR(h100.fp16_tflops, 990, 1);
  EXPECT_DOUBLE_EQ(h100.memory_gbps, 3350);
  const DeviceModel a100 = DeviceModel::ByName("a100");
  EXPECT_EQ(a100.sms, 108);
  EXPECT_DOUBLE_EQ(a100.fp32_tflops, 19.5);
  EXPECT_DOUBLE_EQ(a100.tf32_tflops, 156);
  EXPECT_DOUBLE_EQ(a100.fp16_tflops, 312);
  EXPECT_DOUBLE_EQ(a100.memory_gbps, 2039);
  const DeviceModel v100 = DeviceModel::ByName("v100");
  EXPECT_EQ(v100.sms, 80);
  EXPECT_DOUBLE_EQ(v100.fp32_tflops, 15.7);
  EXPECT_DOUBLE_EQ(v100.fp16_tflops, 125);
  EXPECT_DOUBLE_EQ(v100.memory_gbps, 900);
  const DeviceModel cpu = DeviceModel::ByName("cpu");
  EXPECT_EQ(cpu.sms, static_cast<int>(std::max(1u, std::thread::hardware_concurrency())));
  EXPECT_EQ(cpu.max_concurrent_kernels, cpu.sms);
  for (const std::string& name : DeviceModel::KnownNames()) {
    const DeviceModel d = DeviceModel::ByName(name);
    EXPECT_EQ(d.name, name);
    EXPECT_GT(d.launch_us, 0) << name;
    EXPECT_GT(d.sync_us, 0) << name;
    EXPECT_GE(d.tf32_tflops, d.fp32_tflops) << name;
    EXPECT_GE(d.fp16_tflops, d.tf32_tflops) << name;
  }
}

TEST(DeviceModel, ByNameIgnoresCase) { EXPECT_EQ(DeviceModel::ByName("H100").sms, 132); }

TEST(DeviceModel, ByNameListsKnownNamesOnError) {
  try {
    DeviceModel::ByName("tpu");
    FAIL() << "expected autograph::Error";
  } catch (const autograph::Error& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("\"tpu\""), std::string::npos) << message;
    for (const char* known : {"h100", "a100", "v100", "cpu"})
      EXPECT_NE(message.find(known), std::string::npos) << message;
  }
}

}  // namespace
