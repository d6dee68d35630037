// autograph::packed_linear(x, weight, bias): x · weightᵀ + bias with the weight packed the first time
// it is seen, for the faster of two GEMMs on this CPU, timed then on that first input: MKL's
// (cblas_sgemm_pack, mkl::_mkl_linear, what Inductor's just-in-time freezing uses for float32) and
// oneDNN's (mkldnn::_linear_pointwise on a reordered weight, what AOTInductor's freezing falls back to).
// Which is faster depends on the CPU: MKL's won on an Intel Xeon, oneDNN's by a wide margin on an AMD
// EPYC (bench/results/export-path-2026-11-26g-cpu). Ahead-of-time compilation cannot pack — a packed
// matrix cannot be saved — but a package can call this op: the pack is made when the package first
// runs and kept for that weight.
// Elsewhere (not a float32 CPU matrix, neither library) it is at::linear.
#include <ATen/Config.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/ops/linear.h>
#include <torch/library.h>

#include <algorithm>
#include <chrono>
#include <limits>
#include <map>
#include <mutex>
#include <tuple>

namespace autograph {
namespace {

struct Packed {
  at::Tensor weight;  // keeps the weight's storage (when it owns one) alive while the pack is used
  at::Tensor packed;  // for mkl::_mkl_linear, or a oneDNN tensor for mkldnn::_linear_pointwise
  bool onednn = false;
  int64_t batch = 0;  // the rows the pack was made for; other row counts fall back inside _mkl_linear
};

// A weight is recognised by where its data is, its sizes and a few of its values: the tensors a
// package hands over may not own their memory, so a pack must not outlive a weight unnoticed.
using Key = std::tuple<const void*, int64_t, int64_t, float, float, float>;

Key KeyOf(const at::Tensor& weight) {
  const float* data = weight.const_data_ptr<float>();
  const int64_t n = weight.numel();
  return {data, weight.size(0), weight.size(1), data[0], data[n / 2], data[n - 1]};
}

using MklLinear = at::Tensor(const at::Tensor&, const at::Tensor&, const at::Tensor&, const std::optional<at::Tensor>&,
                             int64_t);
using OneDnnLinear = at::Tensor(const at::Tensor&, const at::Tensor&, const std::optional<at::Tensor>&,
                                c10::string_view, c10::List<std::optional<c10::Scalar>>,
                                std::optional<c10::string_view>);

// The ops of either library, where this torch has it.
std::optional<c10::TypedOperatorHandle<at::Tensor(const at::Tensor&, int64_t)>> MklReorder() {
  static const auto op = [] {
    auto handle = c10::Dispatcher::singleton().findSchema({"mkl::_mkl_reorder_linear_weight", ""});
    return AT_MKL_ENABLED() && handle ? std::optional(handle->typed<at::Tensor(const at::Tensor&, int64_t)>())
                                      : std::nullopt;
  }();
  return op;
}

std::optional<c10::TypedOperatorHandle<at::Tensor(const at::Tensor&, std::optional<int64_t>)>> OneDnnReorder() {
  static const auto op = [] {
    auto handle = c10::Dispatcher::singleton().findSchema({"mkldnn::_reorder_linear_weight", ""});
    auto linear = c10::Dispatcher::singleton().findSchema({"mkldnn::_linear_pointwise", ""});
    return handle && linear ? std::optional(handle->typed<at::Tensor(const at::Tensor&, std::optional<int64_t>)>())
                            : std::nullopt;
  }();
  return op;
}

at::Tensor Run(const Packed& pack, const at::Tensor& x, const at::Tensor& weight, const std::optional<at::Tensor>& bias) {
  if (pack.onednn) {
    static const auto linear =
        c10::Dispatcher::singleton().findSchemaOrThrow("mkldnn::_linear_pointwise", "").typed<OneDnnLinear>();
    return linear.call(x, pack.packed, bias, "none", c10::List<std::optional<c10::Scalar>>(), std::nullopt);
  }
  static const auto linear = c10::Dispatcher::singleton().findSchemaOrThrow("mkl::_mkl_linear", "").typed<MklLinear>();
  return linear.call(x, pack.packed, weight, bias, pack.batch);
}

// The best of three runs, in seconds (the first run of each pack warms its code and caches).
double Time(const Packed& pack, const at::Tensor& x, const at::Tensor& weight, const std::optional<at::Tensor>& bias) {
  double best = std::numeric_limits<double>::infinity();
  for (int run = 0; run < 4; ++run) {
    const auto start = std::chrono::steady_clock::now();
    Run(pack, x, weight, bias);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (run > 0) best = std::min(best, seconds);
  }
  return best;
}

// The packs of both libraries (where they exist) for the first input's rows, timed on it; the faster.
Packed FasterPack(const at::Tensor& x, const at::Tensor& weight, const std::optional<at::Tensor>& bias, int64_t rows) {
  std::vector<Packed> packs;
  if (auto reorder = MklReorder()) packs.push_back(Packed{weight, reorder->call(weight, rows), false, rows});
  if (auto reorder = OneDnnReorder()) packs.push_back(Packed{weight, reorder->call(weight, rows), true, rows});
  if (packs.size() == 1) return packs.front();
  return Time(packs[0], x, weight, bias) <= Time(packs[1], x, weight, bias) ? packs[0] : packs[1];
}

at::Tensor PackedLinear(const at::Tensor& x, const at::Tensor& weight, const std::optional<at::Tensor>& bias) {
  const bool packable = (MklReorder() || OneDnnReorder()) && x.is_cpu() && weight.is_cpu() &&
                        x.scalar_type() == at::kFloat && weight.scalar_type() == at::kFloat && weight.dim() == 2 &&
                        weight.is_contiguous() && weight.numel() > 0 && x.dim() >= 2 && x.size(-1) == weight.size(1) &&
                        (!bias || (bias->scalar_type() == at::kFloat && bias->dim() == 1));
  if (!packable) return at::linear(x, weight, bias);
  static std::mutex mutex;
  static std::map<Key, Packed> packs;
  const int64_t rows = x.numel() / x.size(-1);
  const Key key = KeyOf(weight);
  {
    std::lock_guard<std::mutex> lock(mutex);
    if (auto it = packs.find(key); it != packs.end()) return Run(it->second, x, weight, bias);
  }
  // Packed and timed outside the lock (another thread may pack the same weight meanwhile: the first
  // pack stored is the one kept).
  const Packed pack = FasterPack(x, weight, bias, rows);
  {
    std::lock_guard<std::mutex> lock(mutex);
    packs.emplace(key, pack);
  }
  return Run(pack, x, weight, bias);
}

}  // namespace
}  // namespace autograph

TORCH_LIBRARY_FRAGMENT(autograph, m) {
  m.def("packed_linear(Tensor x, Tensor weight, Tensor? bias=None) -> Tensor");
  m.impl("packed_linear", c10::DispatchKey::CompositeExplicitAutograd, TORCH_FN(autograph::PackedLinear));
}
