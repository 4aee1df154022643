// Softmax along one axis, either contiguous (the last axis) or strided (the channel axis of
// NCDHW, vectorized across the positions that share it). Max, exponentials and sums in fp32;
// row sums carried into double.
#pragma once

#include <cstdint>

#include "backends/cpu/cpu_features.h"
#include "voxrt/dtype.h"

namespace voxrt::cpu {

struct SoftmaxKernels {
  const char* name;  // "f32_softmax__avx512"
  /// Softmax of each of `rows` contiguous rows of n elements (short rows are done many at a
  /// time, vectorized across the block).
  void (*rows)(const void* x, void* y, int64_t rows, int64_t n);
  /// For each of `count` adjacent positions j: softmax of x[j + k * stride], k < n.
  void (*strided)(const void* x, void* y, int64_t n, int64_t stride, int64_t count);
};

/// The best kernels for storage dtype `t` (f32 or f16) at or below `isa`; nullptr otherwise.
const SoftmaxKernels* softmax_kernels(DType t, Isa isa);

}  // namespace voxrt::cpu
