// The direct convolution's input copies (conv_direct.cpp): input rows into the zero-padded,
// phase-split planes its microkernels read, converted to the row's panel type.
#pragma once

#include <cstddef>
#include <cstdint>

#include "backends/cpu/conv/conv_gemm.h"
#include "backends/cpu/kernels/gemm/gemm.h"

namespace voxrt::cpu {

// Width (and height) strides above this take the packed path.
inline constexpr int64_t kMaxPhases = 8;

// Where a padded plane's rows go: sy * sx phase planes of `phase_plane` elements (bb bytes each),
// rows `xlen` elements apart.
struct PhaseLayout {
  int64_t sy, sx, xlen, phase_plane;
  size_t bb;
};

// Converts input rows [iy0, iy1) of one input plane (`src` its row iy0, storage dtype) into the
// phases of a padded plane starting at `dst`: padded row py = iy + pad lands in phase row py / sy -
// y0, column j of phase rx holds padded column j * sx + rx, or with unit strides and a `shift`,
// padded column j + shift (the second tap of a tap pair). `scratch` holds 4 * xlen storage
// elements. With `pair` (a channel pair, no shift: g.to_panel_pair), `dst` is the element and both
// members are written at once, the second from the same rows of `second`, or zeros where
// `second` is null (an odd channel count's last pack).
void copy_rows(const GemmKernel& g, const ConvWindow& win, const PhaseLayout& ph,
               const uint8_t* src, bool pair, const uint8_t* second, int64_t iy0, int64_t iy1,
               int64_t y0, int64_t shift, uint8_t* dst, uint8_t* scratch);

// Input rows [iy0, iy1) of one channel's plane (`src` its row iy0) into a padded plane of width
// pairs (`ph` with one width phase): element j of a padded row holds padded columns 2j and 2j + 1,
// so the padded row is its columns as consecutive bf16 values, written whole (padding zeros
// included).
void copy_wide_rows(const GemmKernel& g, const ConvWindow& win, const PhaseLayout& ph,
                    const uint8_t* src, int64_t iy0, int64_t iy1, int64_t y0, uint8_t* dst);

// Zeroes what the copies leave unwritten in a padded plane of `ylen` rows per phase (all columns
// are written with `whole_rows`: copy_wide_rows).
void zero_padding(const ConvWindow& win, const PhaseLayout& ph, uint8_t* dst, int64_t iy0,
                  int64_t iy1, int64_t y0, int64_t ylen, bool whole_rows);

}  // namespace voxrt::cpu
