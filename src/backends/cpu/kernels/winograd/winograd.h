// Winograd F(2, 3) transforms (Lavin and Gray, "Fast Algorithms for Convolutional Neural
// Networks", 2016) for 3x3x3 and 3x3 convolutions of stride 1, and F(4, 3) ones for fp16 storage
// (WinogradKernels::f43 below): an output tile of 2x2x2 (2x2)
// positions is the inverse transform of the elementwise products of the transformed weights and
// the transformed 4x4x4 (4x4) input tile, 64 (16) products per input and output channel pair
// where the direct form takes 216 (36). The products of a block of tiles are 64 (16) gemms, one
// per transform position (backends/cpu/conv/conv_winograd.cpp); these kernels make their B panels
// from X's rows and their outputs back into Y's rows, fp32 in registers whatever the storage.
//
//   const WinogradForm& f = winograd_kernels(t, isa)->f23;
//   f.input_rows(rows, 16, x0, w, len, tmp + lane0, stride);  // each segment of a block's tiles
//   f.input_finish(tmp, stride, true, lanes, v + c * nr, c_count * nr);  // per input channel
//   ... the gemms ...
//   f.output_gather(m + ch * nr, m_count * nr, true, lanes, o, stride);  // per output channel
//   f.output_row(o + (dz * 2 + dy) * 4 * stride + lane0, stride, len, cols, ...);  // per row
//
// Transforms (1D; the 2D and 3D ones apply them along each axis): input B^T d = (d0 - d2, d1 +
// d2, d2 - d1, d1 - d3), output A^T m = (m0 + m1 + m2, m1 - m2 - m3), weights G g = (g0, (g0 +
// g1 + g2) / 2, (g0 - g1 + g2) / 2, g2).
#pragma once

#include <cstdint>

#include "backends/cpu/cpu_features.h"
#include "backends/cpu/kernels/eltwise/activation.h"
#include "voxrt/dtype.h"

namespace voxrt::cpu {

/// The most tiles one input_rows call takes (len), and the padding the transforms' fp32 rows need
/// past their last lane (`stride` >= lanes + kWinogradLanePad): whole vectors are written there.
inline constexpr int64_t kWinogradMaxLen = 128;
inline constexpr int64_t kWinogradLanePad = 16;

/// One form's transforms, F(r, 3) with tiles of T = 2 (F(2, 3)) or 4 (F(4, 3)) outputs along an
/// axis from N = T + 2 inputs.
struct WinogradForm {
  const char* name;  // "f32_winograd__avx512", "f16_winograd_f43__avx512"
  /// The width transform of `nrows` rows of X's storage dtype (a null row: zeros, a row outside
  /// X): for tile lanes j < len (at most kWinogradMaxLen), the N values B^T (x[x0 + T j + u], u <
  /// N), x read as zero outside [0, w); row r's value u at out[(r * N + u) * stride + j]. A tile
  /// takes N * N rows in 3D, N in 2D.
  void (*input_rows)(const void* const* rows, int64_t nrows, int64_t x0, int64_t w, int64_t len,
                     float* out, int64_t stride);
  /// The height transform (and the depth one where `depth`) of lanes [0, lanes) of input_rows'
  /// N * N (N without depth) rows at `in` (row r = depth a * N + height b): position xi = (p * N +
  /// q) * N + u (q * N + u) at v[xi * v_stride + j].
  void (*input_finish)(const float* in, int64_t stride, bool depth, int64_t lanes, float* v,
                       int64_t v_stride);
  /// The inverse height transform (and depth) of lanes [0, lanes) of the N^3 (N^2) products of an
  /// output channel, position xi at m[xi * m_stride + j]: output row (dz, dy), dz and dy < T,
  /// width position u < N, at o[((dz * T + dy) * N + u) * stride + j].
  void (*output_gather)(const float* m, int64_t m_stride, bool depth, int64_t lanes, float* o,
                        int64_t stride);
  /// The inverse width transform of lanes [0, len) of one output row's N positions (u at o + u *
  /// stride): its T * len values, of which the first `cols` are stored at y after + bias, +
  /// residual (null: none), the activation (the residual after it where residual_after_act).
  void (*output_row)(const float* o, int64_t stride, int64_t len, int64_t cols, float bias,
                     const void* residual, const ActParams& act, bool residual_after_act, void* y);
  /// output_row storing fp32 values at y whatever the storage (the residual still of the
  /// storage's): a fused output Cast of fp16 storage, a head's input rows (ConvWinograd).
  void (*output_row_f32)(const float* o, int64_t stride, int64_t len, int64_t cols, float bias,
                         const void* residual, const ActParams& act, bool residual_after_act,
                         void* y);
};

/// F(4, 3): an output tile of 4x4x4 (4x4) positions from a 6x6x6 (6x6) input tile, 216 (36)
/// products per channel pair where the direct form takes 1728 (144; F(2, 3): 512 and 64). Its
/// transforms take 7x F(2, 3)'s rounding error in fp32 in 2D (relative L2 2-3e-6 a layer at 32 to
/// 256 channels against 2-5e-7), which fp16 storage's own rounding (5e-4 a value) hides and
/// fp32's bound (1e-5 over a network) does not, so only fp16 storage takes it (ConvWinograd::f43).
/// Transforms, 1D: input B^T d = (4 d0 - 5 d2 + d4, -4 (d1 + d2) + d3 + d4, 4 (d1 - d2) - d3 + d4,
/// 2 (d3 - d1) - d2 + d4, 2 (d1 - d3) - d2 + d4, 4 d1 - 5 d3 + d5), output A^T m = (m0 + m1 + m2 +
/// m3 + m4, m1 - m2 + 2 (m3 - m4), m1 + m2 + 4 (m3 + m4), m1 - m2 + 8 (m3 - m4) + m5) with m's six
/// values divided by 4, 6, 6, 24, 24 and 1, the factors ConvWinograd multiplies G's rows by (G g
/// = (g0 / 4, -(g0 + g1 + g2) / 6, (-g0 + g1 - g2) / 6, (g0 + 2 g1 + 4 g2) / 24, (g0 - 2 g1 + 4
/// g2) / 24, g2)).
struct WinogradKernels {
  WinogradForm f23;
  WinogradForm f43;  // fp16 storage only: null name and functions for fp32
};

/// The best kernels for storage dtype `t` (f32 or f16) at or below `isa`; nullptr for others.
const WinogradKernels* winograd_kernels(DType t, Isa isa);

}  // namespace voxrt::cpu
