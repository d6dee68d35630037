// libFuzzer target: device-model JSON (what `autograph calibrate` writes and --device-model reads).
// Anything is read or rejected with Error; what is read is valid and writes back to what it read.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <nlohmann/json.hpp>

#include "autograph/error.h"
#include "search/cost/device_model.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const nlohmann::json json = nlohmann::json::parse(data, data + size, nullptr, /*allow_exceptions=*/false);
  if (json.is_discarded()) return 0;
  autograph::DeviceModel device;
  try {
    device = autograph::DeviceModelFromJson(json);
  } catch (const autograph::Error&) {
    return 0;
  }
  autograph::ValidateDeviceModel(device);  // throws (and so fails the target) if an invalid model was read
  const nlohmann::json written = autograph::DeviceModelToJson(device);
  if (autograph::DeviceModelToJson(autograph::DeviceModelFromJson(written)) != written) std::abort();
  return 0;
}
