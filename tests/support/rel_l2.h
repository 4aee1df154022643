// The relative L2 distance the tests hold outputs to, over any dtype the reference reads.
#pragma once

#include <cmath>

#include "backends/ref/tensor_math.h"
#include "voxrt/tensor.h"

namespace voxrt {

/// sqrt(sum (a - b)^2 / sum b^2); NaN where exactly one side is NaN counts as infinite error.
inline double rel_l2(const Tensor& a, const Tensor& b) {
  double num = 0, den = 0;
  for (int64_t i = 0; i < b.numel(); ++i) {
    double x = ref::load(a, i), y = ref::load(b, i);
    if (std::isnan(x) || std::isnan(y)) {
      if (std::isnan(x) != std::isnan(y)) return INFINITY;
      continue;
    }
    if (std::isinf(x) || std::isinf(y)) {
      if (x != y) return INFINITY;
      continue;
    }
    num += (x - y) * (x - y);
    den += y * y;
  }
  return den > 0 ? std::sqrt(num / den) : std::sqrt(num);
}

}  // namespace voxrt
