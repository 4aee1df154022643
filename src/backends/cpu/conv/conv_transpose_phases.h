// The width phases of a ConvTranspose's output row (x = s * j + r for phase r): how many outputs
// a phase has and how phases are interleaved into a row. Both ConvTranspose forms store their
// width phases this way (conv_transpose_gemm.cpp, conv_transpose_direct.cpp).
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "backends/cpu/conv/conv_gemm.h"

namespace voxrt::cpu {

// Outputs of phase r (x = s * j + r) along an axis of `out` outputs and stride s.
inline int64_t phase_count(int64_t out, int64_t s, int64_t r) {
  return r < out ? ceil_div(out - r, s) : 0;
}

// The s width phases of a row of `out` outputs into the row at `dst`: phase r's outputs j in
// [x0, x0 + len) from `src + r * phase_stride` on, dst[s * j + r] = src[r * phase_stride + j -
// x0]; for `rows` such rows, src and dst advancing by src_step and dst_step (the output channels
// of a strip: the counts are worked out once for all of them). Both ConvTranspose forms store
// their width phases this way.
template <class T>
void interleave_phases(const T* src, int64_t phase_stride, int64_t s, int64_t out, int64_t x0,
                       int64_t len, T* dst, int64_t rows = 1, int64_t src_step = 0,
                       int64_t dst_step = 0) {
  auto count = [&](int64_t r) { return std::clamp<int64_t>(phase_count(out, s, r) - x0, 0, len); };
  if (s == 1) {
    const size_t bytes = static_cast<size_t>(count(0)) * sizeof(T);
    for (int64_t m = 0; m < rows; ++m)
      std::memcpy(dst + m * dst_step + x0, src + m * src_step, bytes);
  } else if (s == 2) {
    // Phase 1 has as many outputs as phase 0 or one fewer.
    const int64_t pairs = count(1);
    const bool tail = pairs < count(0);
    for (int64_t m = 0; m < rows; ++m) {
      const T* sm = src + m * src_step;
      T* dm = dst + m * dst_step;
      interleave(sm, sm + phase_stride, pairs, dm + 2 * x0);
      if (tail) dm[2 * (x0 + pairs)] = sm[pairs];
    }
  } else {
    for (int64_t m = 0; m < rows; ++m)
      for (int64_t r = 0; r < std::min(s, out); ++r)  // phases past the row have no outputs
        for (int64_t j = 0; j < count(r); ++j)
          dst[m * dst_step + (x0 + j) * s + r] = src[m * src_step + r * phase_stride + j];
  }
}

// The same on storage-dtype bytes (fp32 or fp16); the steps count elements.
inline void interleave_phases(const uint8_t* src, int64_t phase_stride, size_t es, int64_t s,
                              int64_t out, int64_t x0, int64_t len, uint8_t* dst, int64_t rows,
                              int64_t src_step, int64_t dst_step) {
  if (es == 4)
    interleave_phases(reinterpret_cast<const float*>(src), phase_stride, s, out, x0, len,
                      reinterpret_cast<float*>(dst), rows, src_step, dst_step);
  else
    interleave_phases(reinterpret_cast<const uint16_t*>(src), phase_stride, s, out, x0, len,
                      reinterpret_cast<uint16_t*>(dst), rows, src_step, dst_step);
}

}  // namespace voxrt::cpu
