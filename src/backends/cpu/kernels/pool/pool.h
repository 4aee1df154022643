// Max and average pooling, one output row at a time along the last spatial axis: the driver
// hands the input rows its window covers on the outer axes (2 for 2D, up to k_d * k_h for 3D),
// the kernel slides the window along the row. Stride 1 and 2 are vectorized over outputs (the
// 2x2(x2) stride-2 pool is one pair of loads and a deinterleave per row), other strides and the
// padded edges run lane by lane.
#pragma once

#include <cstdint>

#include "backends/cpu/cpu_features.h"
#include "voxrt/dtype.h"

namespace voxrt::cpu {

/// The window along the row's axis, as the reference resolves it.
struct PoolAxis {
  int64_t in, out, kernel, stride, dilation, pad_begin, pad_end;
};

struct PoolKernels {
  const char* name;  // "f32_pool__avx512"
  /// `count` output rows; output row j reads the input rows rows[r] + j * step (elements) and
  /// writes y + j * a.out: y[x] = max over rows r and taps t of
  /// rows[r][x * stride - pad_begin + t * dilation], taps inside [0, in) only; -inf where none
  /// is; NaN inputs are skipped, as in the reference.
  void (*max_rows)(const void* const* rows, int nrows, int64_t step, int64_t count,
                   const PoolAxis& a, void* y);
  /// The same rows averaged: the sum / (nrows * taps inside), or with `count_include_pad`
  /// / (padded_rows * taps inside the padded row); NaN where the divisor is 0.
  void (*avg_rows)(const void* const* rows, int nrows, int padded_rows, bool count_include_pad,
                   int64_t step, int64_t count, const PoolAxis& a, void* y);
};

/// The best kernels for storage dtype `t` (f32 or f16) at or below `isa`; nullptr otherwise.
const PoolKernels* pool_kernels(DType t, Isa isa);

}  // namespace voxrt::cpu
