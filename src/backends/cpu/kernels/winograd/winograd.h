// Winograd F(2, 3) transforms (Lavin and Gray, "Fast Algorithms for Convolutional Neural
// Networks", 2016) for 3x3x3 and 3x3 convolutions of stride 1, and F(4, 3) ones for fp16 storage
// (WinogradF43Kernels below): an output tile of 2x2x2 (2x2)
// positions is the inverse transform of the elementwise products of the transformed weights and
// the transformed 4x4x4 (4x4) input tile, 64 (16) products per input and output channel pair
// where the direct form takes 216 (36). The products of a block of tiles are 64 (16) gemms, one
// per transform position (backends/cpu/conv/conv_winograd.cpp); these kernels make their B panels
// from X's rows and their outputs back into Y's rows, fp32 in registers whatever the storage.
//
//   input_rows(rows, 16, x0, w, len, tmp + lane0, stride);  // each segment of a block's tiles
//   input_finish(tmp, stride, true, lanes, v + c * nr, c_count * nr);  // per input channel
//   ... the gemms ...
//   output_gather(m + ch * nr, m_count * nr, true, lanes, o, stride);  // per output channel
//   output_row(o + (dz * 2 + dy) * 4 * stride + lane0, stride, len, cols, ...);  // per row
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

/// F(4, 3): an output tile of 4x4x4 (4x4) positions from a 6x6x6 (6x6) input tile, 216 (36)
/// products per channel pair where the direct form takes 1728 (144; F(2, 3): 512 and 64). Its
/// transforms take 7x F(2, 3)'s rounding error in fp32 in 2D (relative L2 2-3e-6 a layer at 32 to
/// 256 channels against 2-5e-7), which fp16 storage's own rounding (5e-4 a value) hides and
/// fp32's bound (1e-5 over a network) does not, so only fp16 storage takes it (ConvWinograd::f43).
/// Transforms, 1D: input B^T d = (4 d0 - 5 d2 + d4, -4 (d1 + d2) + d3 + d4, 4 (d1 - d2) - d3 + d4,
/// 2 (d3 - d1) - d2 + d4, 2 (d1
/// - d3) - d2 + d4, 4 d1 - 5 d3 + d5), output A^T m = (m0 + m1 + m2 + m3 + m4, m1 - m2 + 2 (m3 -
/// m4), m1 + m2 + 4 (m3 + m4), m1 - m2 + 8 (m3 - m4) + m5) with m's six values divided by 4, 6,
/// 6, 24, 24 and 1, the factors ConvWinograd multiplies G's rows by (G g = (g0 / 4, -(g0 + g1 +
/// g2) / 6, (-g0 + g1 - g2) / 6, (g0 + 2 g1 + 4 g2) / 24, (g0 - 2 g1 + 4 g2) / 24, g2)).
struct WinogradF43Kernels {
  const char* name;  // "f16_winograd_f43__avx512"; null, and the functions, for fp32 storage
  /// As WinogradKernels::input_rows with six values a tile, B^T (x[x0 + 4j + u], u < 6): row r's
  /// value u at out[(r * 6 + u) * stride + j]; 36 rows a tile in 3D, 6 in 2D.
  void (*input_rows)(const void* const* rows, int64_t nrows, int64_t x0, int64_t w, int64_t len,
                     float* out, int64_t stride);
  /// The height transform (and the depth one where `depth`) of lanes [0, lanes) of input_rows' 36
  /// (6 without depth) rows at `in` (row r = depth a * 6 + height b): position xi = (p * 6 + q) *
  /// 6 + u (q * 6 + u) at v[xi * v_stride + j].
  void (*input_finish)(const float* in, int64_t stride, bool depth, int64_t lanes, float* v,
                       int64_t v_stride);
  /// The inverse height transform (and depth) of lanes [0, lanes) of the 216 (36) products of an
  /// output channel, position xi at m[xi * m_stride + j]: output row (dz, dy), dz and dy < 4,
  /// width position u < 6, at o[((dz * 4 + dy) * 6 + u) * stride + j].
  void (*output_gather)(const float* m, int64_t m_stride, bool depth, int64_t lanes, float* o,
                        int64_t stride);
  /// As WinogradKernels::output_row with six positions a tile (u at o + u * stride) and 4 * len
  /// values.
  void (*output_row)(const float* o, int64_t stride, int64_t len, int64_t cols, float bias,
                     const void* residual, const ActParams& act, bool residual_after_act, void* y);
};

struct WinogradKernels {
  const char* name;  // "f32_winograd__avx512"
  /// The width transform of `nrows` rows of X's storage dtype (a null row: zeros, a row outside
  /// X): for tile lanes j < len (at most kWinogradMaxLen), the four values B^T (x[x0 + 2j + u],
  /// u < 4), x read as zero outside [0, w); row r's value u at out[(r * 4 + u) * stride + j].
  void (*input_rows)(const void* const* rows, int64_t nrows, int64_t x0, int64_t w, int64_t len,
                     float* out, int64_t stride);
  /// The height transform (and the depth one where `depth`) of lanes [0, lanes) of input_rows'
  /// 16 (4 without depth) rows at `in` (row r = depth a * 4 + height b): position xi = (p * 4 +
  /// q) * 4 + u (q * 4 + u) at v[xi * v_stride + j].
  void (*input_finish)(const float* in, int64_t stride, bool depth, int64_t lanes, float* v,
                       int64_t v_stride);
  /// The inverse height transform (and depth) of lanes [0, lanes) of the 64 (16) products of an
  /// output channel, position xi at m[xi * m_stride + j]: output row (dz, dy), width position u,
  /// at o[((dz * 2 + dy) * 4 + u) * stride + j].
  void (*output_gather)(const float* m, int64_t m_stride, bool depth, int64_t lanes, float* o,
                        int64_t stride);
  /// The inverse width transform of lanes [0, len) of one output row's four positions (u at o + u
  /// * stride): its 2 * len values, of which the first `cols` are stored at y after + bias, +
  /// residual (null: none), the activation (the residual after it where residual_after_act).
  void (*output_row)(const float* o, int64_t stride, int64_t len, int64_t cols, float bias,
                     const void* residual, const ActParams& act, bool residual_after_act, void* y);
  WinogradF43Kernels f43;
};

/// The best kernels for storage dtype `t` (f32 or f16) at or below `isa`; nullptr for others.
const WinogradKernels* winograd_kernels(DType t, Isa isa);

}  // namespace voxrt::cpu
