// Reductions over contiguous runs, accumulating in fp32 lanes carried into double every few
// thousand elements, whatever the storage dtype: normalization statistics and global pooling.
#pragma once

#include <cstdint>

#include "backends/cpu/cpu_features.h"
#include "voxrt/dtype.h"

namespace voxrt::cpu {

struct ReduceKernels {
  const char* name;  // "f16_f32acc_reduce__avx2"
  /// Sums of (x[i] - shift) and of its square over [0, n). A shift near the mean keeps the
  /// variance E[(x - shift)^2] - E[x - shift]^2 free of cancellation (|x| ~ 300 in fp16 too).
  void (*moments)(const void* x, int64_t n, float shift, double* sum, double* sum_sq);
  /// Sum of x[0, n).
  double (*sum)(const void* x, int64_t n);
  /// Largest of x[0, n), NaN if any is NaN, -inf for n = 0 (GlobalMaxPool's rule).
  float (*max)(const void* x, int64_t n);
};

/// The best kernels for storage dtype `t` (f32 or f16) at or below `isa`; nullptr otherwise.
const ReduceKernels* reduce_kernels(DType t, Isa isa);

}  // namespace voxrt::cpu
