#include "core/output_error.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "autograph/error.h"

namespace autograph {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// Whether the outputs can be compared at all: as many, each of the reference's shape and dtype, the
// integer ones equal. Where not, the loss every measure gives them (infinite).
bool Comparable(const std::vector<at::Tensor>& got, const std::vector<at::Tensor>& want) {
  if (got.size() != want.size()) return false;
  for (size_t k = 0; k < got.size(); ++k) {
    if (got[k].sizes() != want[k].sizes() || got[k].scalar_type() != want[k].scalar_type()) return false;
    if (!at::isFloatingType(want[k].scalar_type()) && !at::equal(got[k], want[k])) return false;
  }
  return true;
}

bool Measured(const at::Tensor& want) { return at::isFloatingType(want.scalar_type()) && want.numel() > 0; }

// Rows of one output whose largest entry moved, and its rows (1 for a 0-d output).
std::pair<int64_t, int64_t> Top1Changed(const at::Tensor& got, const at::Tensor& want) {
  const at::Tensor g = got.to(at::kDouble).reshape({-1, want.dim() ? want.size(-1) : 1});
  const at::Tensor w = want.to(at::kDouble).reshape({-1, want.dim() ? want.size(-1) : 1});
  // A row holding a NaN or an infinity changed, whatever argmax makes of it.
  const at::Tensor finite = at::isfinite(g).all(1) & at::isfinite(w).all(1);
  const at::Tensor same = (g.argmax(1) == w.argmax(1)) & finite;
  return {g.size(0) - same.sum().item<int64_t>(), g.size(0)};
}

double CosineLoss(const at::Tensor& got, const at::Tensor& want) {
  const at::Tensor g = got.to(at::kDouble).flatten(), w = want.to(at::kDouble).flatten();
  const double gg = g.dot(g).item<double>(), ww = w.dot(w).item<double>(), gw = g.dot(w).item<double>();
  if (!std::isfinite(gg) || !std::isfinite(ww) || !std::isfinite(gw)) return kNaN;
  if (gg == 0 && ww == 0) return 0;
  if (gg == 0 || ww == 0) return 1;
  return std::max(0.0, 1 - gw / std::sqrt(gg * ww));
}

double NoiseToSignal(const at::Tensor& got, const at::Tensor& want) {
  const at::Tensor w = want.to(at::kDouble), d = got.to(at::kDouble) - w;
  const double noise = d.pow(2).sum().item<double>(), signal = w.pow(2).sum().item<double>();
  if (!std::isfinite(noise) || !std::isfinite(signal)) return kNaN;
  return signal > 0 ? noise / signal : noise;  // an all-zero reference: the noise itself, as RelativeError
}

// The worst of `per_output(got[k], want[k])` over the floating outputs (NaN wins).
template <typename F>
double Worst(const std::vector<at::Tensor>& got, const std::vector<at::Tensor>& want, F per_output) {
  double worst = 0;
  for (size_t k = 0; k < got.size(); ++k) {
    if (!Measured(want[k])) continue;
    const double loss = per_output(got[k], want[k]);
    if (std::isnan(loss)) return loss;
    worst = std::max(worst, loss);
  }
  return worst;
}

}  // namespace

const std::vector<std::string>& AccuracyMeasures() {
  static const std::vector<std::string> names = {"max_error", "top1", "cosine", "sqnr"};
  return names;
}

double RelativeError(const std::vector<at::Tensor>& got, const std::vector<at::Tensor>& want) {
  if (!Comparable(got, want)) return kInf;
  return Worst(got, want, [](const at::Tensor& g, const at::Tensor& w) {
    const at::Tensor gd = g.to(at::kDouble), wd = w.to(at::kDouble);
    const double diff = (gd - wd).abs().max().item<double>(), scale = wd.abs().max().item<double>();
    if (!std::isfinite(diff) || !std::isfinite(scale)) return kNaN;
    return scale > 0 ? diff / scale : diff;
  });
}

MeasuredOutputs MeasureOutputs(const std::string& measure, const std::vector<std::vector<at::Tensor>>& got,
                               const std::vector<std::vector<at::Tensor>>& want) {
  const auto& names = AccuracyMeasures();
  if (std::find(names.begin(), names.end(), measure) == names.end())
    throw InputError("unknown accuracy measure '" + measure + "': max_error, top1, cosine or sqnr");
  MeasuredOutputs out;
  if (got.size() != want.size()) {
    out.loss = kInf;
    return out;
  }
  int64_t changed = 0, rows = 0;
  for (size_t c = 0; c < got.size(); ++c) {
    double loss = 0;
    if (!Comparable(got[c], want[c])) {
      loss = kInf;
    } else if (measure == "top1") {
      int64_t call_changed = 0, call_rows = 0;
      for (size_t k = 0; k < got[c].size(); ++k) {
        if (!Measured(want[c][k])) continue;
        const auto [moved, of] = Top1Changed(got[c][k], want[c][k]);
        call_changed += moved;
        call_rows += of;
      }
      changed += call_changed;
      rows += call_rows;
      loss = call_rows ? static_cast<double>(call_changed) / call_rows : 0.0;
    } else if (measure == "cosine") {
      loss = Worst(got[c], want[c], CosineLoss);
    } else if (measure == "sqnr") {
      loss = Worst(got[c], want[c], NoiseToSignal);
    } else {
      loss = RelativeError(got[c], want[c]);
    }
    out.per_call.push_back(loss);
    if (std::isnan(loss) || std::isnan(out.loss)) {
      out.loss = kNaN;
    } else {
      out.loss = std::max(out.loss, loss);
    }
  }
  // top1 over all calls' rows (a share of the answers), unless a call could not be compared at all.
  if (measure == "top1" && std::isfinite(out.loss)) out.loss = rows ? static_cast<double>(changed) / rows : 0.0;
  return out;
}

}  // namespace autograph
