#pragma once
// StreamPool: the side streams that concurrent groups run on, shared by every CUDA backend of the
// process and never destroyed.
//
// Why not streams owned by a backend: record_stream puts a stream on an allocator block until the
// block is freed, which can be long after the backend that ran the work is gone (a weight, an input,
// an output the caller keeps). On free, PyTorch's caching allocator records an event on every such
// stream; had the stream been destroyed, that would fail or, worse, hit a recycled handle. Backends
// are made and dropped all the time (per measured stage, per verified candidate, per benchmark
// method), so their streams must outlive them: here, the process.
//
// Captures get side streams of their own, and one capture runs at a time in the process: work that
// another program (another model served in the same process) enqueues on a stream while it is being
// captured would be pulled into the graph, or break the capture. So eager runs use the run streams,
// captures the capture streams under CaptureMutex(), and neither meets the other.
#ifdef AUTOGRAPH_WITH_CUDA

#include <c10/core/Device.h>
#include <c10/cuda/CUDAStream.h>

#include <mutex>

namespace autograph {

class StreamPool {
 public:
  enum class Use { kRun, kCapture };
  // Side stream `index` (0, 1, ...) of CUDA device `device` for eager runs or for captures: created
  // non-blocking on first request, the same stream for every later request in the process. Thread-safe.
  static c10::cuda::CUDAStream Side(c10::DeviceIndex device, int index, Use use = Use::kRun);
  // How many side streams of a use `device` has so far (tests: creating backends must not add more).
  static int Size(c10::DeviceIndex device, Use use = Use::kRun);
  // Held while a capture runs: one capture at a time in the process. Recursive: a program captured
  // may run another autograph program inside, on the same thread.
  static std::recursive_mutex& CaptureMutex();
};

}  // namespace autograph

#endif  // AUTOGRAPH_WITH_CUDA
