// Elementwise kernels over contiguous runs of one storage dtype (f32, or f16 computed in fp32
// registers): activations, the per-channel affine map normalizations end with, binary
// arithmetic, and f32 <-> f16 casts. One table row per (dtype, ISA); see eltwise.cpp.
#pragma once

#include <cstdint>

#include "backends/cpu/cpu_features.h"
#include "backends/cpu/kernels/eltwise/activation.h"
#include "voxrt/dtype.h"

namespace voxrt::cpu {

enum class BinOp { add, sub, mul, div, min, max };

struct EltwiseKernels {
  const char* name;  // "f32_eltwise__avx512"
  /// y[i] = act(x[i]); y may be x.
  void (*unary)(const void* x, void* y, int64_t n, const ActParams& p);
  /// y[i] = act((x[i] - shift) * scale + bias + r[i]), without r where it is null (a residual
  /// Add between a normalization and its activation), or with `r_after_act` act((x[i] - shift) *
  /// scale + bias) + r[i] (MONAI's residual units add after the activation); y may be x.
  void (*affine)(const void* x, const void* r, void* y, int64_t n, float shift, float scale,
                 float bias, const ActParams& p, bool r_after_act);
  /// y[i] = a[i] op b[i]. Min and Max return NaN when either side is NaN, like the reference.
  void (*binary)(const void* a, const void* b, void* y, int64_t n, BinOp op);
  /// y[i] = a[i] op s, or s op a[i] when `scalar_first`.
  void (*binary_scalar)(const void* a, float s, void* y, int64_t n, BinOp op, bool scalar_first);
  /// y[r * y_stride + i] += x[r * x_stride + i] for r < rows, i < n (strides in elements): the
  /// taps of a transposed convolution added to their output rows, a plane's rows per call.
  void (*add_rows)(const void* x, int64_t x_stride, void* y, int64_t y_stride, int64_t rows,
                   int64_t n);
  /// y[h * y_stride + i] = b[h] + sum over c < m of w[h * m + c] * x[c * x_stride + i], for h <
  /// mh and i < n: a 1x1 convolution of m fp32 channel rows into mh rows of the storage dtype
  /// (a convolution's fused head, ConvGemm). b may be null (zeros).
  void (*mix)(const float* x, int64_t x_stride, int64_t m, const float* w, const float* b,
              int64_t mh, int64_t n, void* y, int64_t y_stride);
};

struct CastKernels {
  const char* name;  // "f32_f16_cast__avx2"
  void (*f32_to_f16)(const void* x, void* y, int64_t n);
  void (*f16_to_f32)(const void* x, void* y, int64_t n);
};

/// The best kernels for storage dtype `t` (f32 or f16) at or below `isa`; nullptr for other
/// dtypes.
const EltwiseKernels* eltwise_kernels(DType t, Isa isa);
const CastKernels& cast_kernels(Isa isa);

}  // namespace voxrt::cpu
