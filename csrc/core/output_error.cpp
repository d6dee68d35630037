#include "core/output_error.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <cmath>
#include <limits>

namespace autograph {

double RelativeError(const std::vector<at::Tensor>& got, const std::vector<at::Tensor>& want) {
  if (got.size() != want.size()) return std::numeric_limits<double>::infinity();
  double worst = 0;
  for (size_t k = 0; k < got.size(); ++k) {
    if (got[k].sizes() != want[k].sizes() || got[k].scalar_type() != want[k].scalar_type())
      return std::numeric_limits<double>::infinity();
    if (!at::isFloatingType(want[k].scalar_type())) {
      if (!at::equal(got[k], want[k])) return std::numeric_limits<double>::infinity();
      continue;
    }
    if (want[k].numel() == 0) continue;
    const at::Tensor g = got[k].to(at::kDouble), w = want[k].to(at::kDouble);
    const double diff = (g - w).abs().max().item<double>(), scale = w.abs().max().item<double>();
    if (!std::isfinite(diff) || !std::isfinite(scale)) return std::numeric_limits<double>::quiet_NaN();
    worst = std::max(worst, scale > 0 ? diff / scale : diff);
  }
  return worst;
}

double LargestRelativeError(const std::vector<std::vector<at::Tensor>>& got,
                            const std::vector<std::vector<at::Tensor>>& want) {
  if (got.size() != want.size()) return std::numeric_limits<double>::infinity();
  double worst = 0;
  for (size_t k = 0; k < got.size(); ++k) {
    const double error = RelativeError(got[k], want[k]);
    if (std::isnan(error)) return error;
    worst = std::max(worst, error);
  }
  return worst;
}

}  // namespace autograph
