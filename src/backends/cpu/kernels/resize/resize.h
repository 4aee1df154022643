// Linear resize (1D to 3D), separable: the driver blends the input rows an output row needs on
// the outer axes into an fp32 scratch row, then interpolates along the row. The scale-2
// half-pixel case has its own row kernel (fixed weights 1/4 and 3/4, no index tables, no
// scratch row).
#pragma once

#include <cstdint>

#include "backends/cpu/cpu_features.h"
#include "voxrt/dtype.h"

namespace voxrt::cpu {

struct ResizeKernels {
  const char* name;  // "f32_resize__avx2"
  /// tmp[i] = sum over r < nrows of w[r] * rows[r][i], for i < n.
  void (*blend_rows)(const void* const* rows, const float* w, int nrows, float* tmp, int64_t n);
  /// y[i] = w0[i] * tmp[x0[i]] + w1[i] * tmp[x1[i]], for i < n. `stream`: whole vectors at
  /// aligned addresses go out as non-temporal stores (the caller fences before y is read).
  void (*lerp)(const float* tmp, const int32_t* x0, const int32_t* x1, const float* w0,
               const float* w1, void* y, int64_t n, bool stream);
  /// The scale-2 half-pixel row straight from the input rows: with t the rows' blend (as
  /// blend_rows makes it, kept in registers), y[2i] = t[i - 1] / 4 + 3 t[i] / 4 and y[2i + 1] =
  /// 3 t[i] / 4 + t[i + 1] / 4 for i < n, indices clamped to [0, n). `stream` as lerp's.
  void (*blend_lerp_x2)(const void* const* rows, const float* w, int nrows, void* y, int64_t n,
                        bool stream);
};

/// The best kernels for storage dtype `t` (f32 or f16) at or below `isa`; nullptr otherwise.
const ResizeKernels* resize_kernels(DType t, Isa isa);

}  // namespace voxrt::cpu
