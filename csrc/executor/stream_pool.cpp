// StreamPool: process-lifetime side streams, one list per device; see stream_pool.h.
#include "executor/stream_pool.h"

#ifdef AUTOGRAPH_WITH_CUDA

#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAGuard.h>
#include <cuda_runtime.h>

#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "autograph/error.h"

namespace autograph {

namespace {

std::mutex& PoolMutex() {
  static std::mutex mutex;
  return mutex;
}

// Deliberately never freed: the streams must outlive every allocator block that names them, and
// static destructors run in no useful order at exit.
using Key = std::pair<c10::DeviceIndex, StreamPool::Use>;
std::map<Key, std::vector<cudaStream_t>>& Streams() {
  static auto* streams = new std::map<Key, std::vector<cudaStream_t>>();
  return *streams;
}

}  // namespace

c10::cuda::CUDAStream StreamPool::Side(c10::DeviceIndex device, int index, Use use) {
  if (index < 0) throw Error("StreamPool: side stream index " + std::to_string(index) + " is negative");
  std::lock_guard<std::mutex> lock(PoolMutex());
  std::vector<cudaStream_t>& streams = Streams()[{device, use}];
  if (static_cast<int>(streams.size()) <= index) {
    c10::cuda::CUDAGuard guard(device);
    while (static_cast<int>(streams.size()) <= index) {
      cudaStream_t raw = nullptr;
      C10_CUDA_CHECK(cudaStreamCreateWithFlags(&raw, cudaStreamNonBlocking));
      streams.push_back(raw);
    }
  }
  return c10::cuda::getStreamFromExternal(streams[index], device);
}

int StreamPool::Size(c10::DeviceIndex device, Use use) {
  std::lock_guard<std::mutex> lock(PoolMutex());
  auto it = Streams().find({device, use});
  return it == Streams().end() ? 0 : static_cast<int>(it->second.size());
}

std::recursive_mutex& StreamPool::CaptureMutex() {
  static auto* mutex = new std::recursive_mutex();  // never destroyed: captures may run at exit
  return *mutex;
}

}  // namespace autograph

#endif  // AUTOGRAPH_WITH_CUDA
