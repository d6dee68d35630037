// autograph::packed_linear(x, weight, bias): x · weightᵀ + bias with the weight packed for MKL's GEMM
// (cblas_sgemm_pack) the first time a weight is seen, as Inductor's just-in-time freezing does
// (mkl::_mkl_linear). Ahead-of-time compilation cannot do it — a packed matrix cannot be saved, so
// AOTInductor falls back to oneDNN's linear — but a package can call this op: the pack is made when
// the package first runs and kept for that weight. Elsewhere (not a float32 CPU matrix, no MKL)
// it is at::linear.
#include <ATen/Config.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/ops/linear.h>
#include <torch/library.h>

#include <map>
#include <mutex>
#include <tuple>

namespace autograph {
namespace {

struct Packed {
  at::Tensor weight;  // keeps the weight's storage (when it owns one) alive while the pack is used
  at::Tensor packed;
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

at::Tensor PackedLinear(const at::Tensor& x, const at::Tensor& weight, const std::optional<at::Tensor>& bias) {
  const bool packable = AT_MKL_ENABLED() && x.is_cpu() && weight.is_cpu() && x.scalar_type() == at::kFloat &&
                        weight.scalar_type() == at::kFloat && weight.dim() == 2 && weight.is_contiguous() &&
                        weight.numel() > 0 && x.dim() >= 2 && x.size(-1) == weight.size(1) &&
                        (!bias || (bias->scalar_type() == at::kFloat && bias->dim() == 1));
  if (!packable) return at::linear(x, weight, bias);
  static const auto reorder = c10::Dispatcher::singleton()
                                  .findSchemaOrThrow("mkl::_mkl_reorder_linear_weight", "")
                                  .typed<at::Tensor(const at::Tensor&, int64_t)>();
  static const auto linear =
      c10::Dispatcher::singleton()
          .findSchemaOrThrow("mkl::_mkl_linear", "")
          .typed<at::Tensor(const at::Tensor&, const at::Tensor&, const at::Tensor&, const std::optional<at::Tensor>&,
                            int64_t)>();
  static std::mutex mutex;
  static std::map<Key, Packed> packs;
  const int64_t rows = x.numel() / x.size(-1);
  const Key key = KeyOf(weight);
  Packed pack;
  {
    std::lock_guard<std::mutex> lock(mutex);
    auto it = packs.find(key);
    if (it == packs.end()) it = packs.emplace(key, Packed{weight, reorder.call(weight, rows), rows}).first;
    pack = it->second;
  }
  return linear.call(x, pack.packed, weight, bias, pack.batch);
}

}  // namespace
}  // namespace autograph

TORCH_LIBRARY_FRAGMENT(autograph, m) {
  m.def("packed_linear(Tensor x, Tensor weight, Tensor? bias=None) -> Tensor");
  m.impl("packed_linear", c10::DispatchKey::CompositeExplicitAutograd, TORCH_FN(autograph::PackedLinear));
}
