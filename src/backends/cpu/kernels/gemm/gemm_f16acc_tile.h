// The fp16-arithmetic gemm tile, MR x NR (NV vectors of 32 fp16 sums per row, NR = 32 NV), over
// an arithmetic policy H: fp16 fused multiply-adds, and every kF16CarrySteps steps the fp16 sums
// are widened and added into an fp32 copy of the tile, so rounding error grows with the chunk
// length, not with k. A is packed as fp16 pairs (f16_pair), so its broadcast is a 32-bit load. H is
// the AVX512-FP16 instructions (gemm_avx512fp16.h) or their software stand-in
// (f16_f16acc_gemm_emulated__avx512.cpp); the epilogue is AVX-512F either way. H provides:
//   V                      32 fp16 lanes
//   zero()                 all lanes +0
//   load(const uint16_t*)  32 fp16 values
//   broadcast(uint32_t)    an f16_pair element's value in every lane
//   fmadd(a, b, c)         a * b + c, rounded once to fp16
//   widen_lo(v), widen_hi(v)  lanes 0-15, 16-31 as fp32
// Include only from sources built for AVX-512 or above.
#pragma once

#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "backends/cpu/kernels/gemm/gemm_rows.h"

// GCC 12 reports its own intrinsics' deliberately undefined pass-through vectors (`__Y = __Y`)
// as maybe-uninitialized once they are inlined into the kernels.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

namespace voxrt::cpu::gemm_fp16_detail {

inline __m512 activate(__m512 v, Activation act, __m512 alpha) {
  if (act == Activation::relu) return _mm512_max_ps(v, _mm512_setzero_ps());
  if (act == Activation::leaky_relu)
    return _mm512_mask_mul_ps(v, _mm512_cmp_ps_mask(v, _mm512_setzero_ps(), _CMP_LT_OQ), v, alpha);
  return v;
}

// kNv = 3 (NR 96) mirrors the fp32 rows' 8x48 (three vectors a row, 24 sums in registers): at an
// output width of 96 its strips fill every lane where 64-lane ones leave a quarter idle or run
// across rows through a scratch tile.
template <int kMr, class H, int kNv = 2>
void f16_gemm_tile(size_t mr, size_t nc, size_t k, const void* a_panel, const void* b_base,
                   const int64_t* b_offsets, void* c, size_t ldc, const GemmParams& p) {
  constexpr int kNr = 32 * kNv;
  const uint32_t* a = static_cast<const uint32_t*>(a_panel);
  const uint16_t* b_rows = static_cast<const uint16_t*>(b_base);
  if (p.residual)  // the epilogue's residual rows, asked for before the k loop (gemm_tile.h)
    for (int i = 0; i < kMr; ++i)
      for (size_t b = 0; b < kNr * 2 + 63; b += 64)
        __builtin_prefetch(static_cast<const char*>(p.residual) + i * ldc * 2 + b);
  alignas(64) float sum[kMr][kNr];
  if (k == 0) std::memset(sum, 0, sizeof(sum));
  size_t s = 0;
  while (s < k) {
    const bool first = s == 0;  // the first chunk's sums are stored, not added
    size_t end = k - s > static_cast<size_t>(kF16CarrySteps) ? s + kF16CarrySteps : k;
    typename H::V acc[kMr][kNv];
#pragma GCC unroll 8
    for (int i = 0; i < kMr; ++i)
#pragma GCC unroll 3
      for (int j = 0; j < kNv; ++j) acc[i][j] = H::zero();
    for (; s < end; ++s) {
      const uint16_t* b = b_rows + b_offsets[s];
      typename H::V bv[kNv];
#pragma GCC unroll 3
      for (int j = 0; j < kNv; ++j) bv[j] = H::load(b + 32 * j);
#pragma GCC unroll 8
      for (int i = 0; i < kMr; ++i) {
        const typename H::V av = H::broadcast(a[i]);
#pragma GCC unroll 3
        for (int j = 0; j < kNv; ++j) acc[i][j] = H::fmadd(av, bv[j], acc[i][j]);
      }
      a += kMr;
    }
#pragma GCC unroll 8
    for (int i = 0; i < kMr; ++i)
#pragma GCC unroll 3
      for (int j = 0; j < kNv; ++j) {
        float* row = sum[i] + 32 * j;
        const __m512 lo = H::widen_lo(acc[i][j]), hi = H::widen_hi(acc[i][j]);
        _mm512_store_ps(row, first ? lo : _mm512_add_ps(_mm512_load_ps(row), lo));
        _mm512_store_ps(row + 16, first ? hi : _mm512_add_ps(_mm512_load_ps(row + 16), hi));
      }
  }

  const bool full = nc == kNr;
  const __m512 alpha = _mm512_set1_ps(p.alpha);
  alignas(64) uint16_t tmp_out[kNr];
  alignas(64) uint16_t tmp_res[kNr];
  for (size_t i = 0; i < mr; ++i) {
    uint16_t* row = static_cast<uint16_t*>(c) + i * ldc;
    const uint16_t* res = p.residual ? static_cast<const uint16_t*>(p.residual) + i * ldc : nullptr;
    if (res && !full) {
      std::memset(tmp_res, 0, sizeof(tmp_res));
      std::memcpy(tmp_res, res, nc * 2);
      res = tmp_res;
    }
    uint16_t* dst = full ? row : tmp_out;
    const __m512 bias = p.bias ? _mm512_set1_ps(p.bias[i]) : _mm512_setzero_ps();
#pragma GCC unroll 6
    for (int j = 0; j < kNr / 16; ++j) {
      __m512 v = _mm512_add_ps(_mm512_load_ps(sum[i] + 16 * j), bias);
      const __m512 r =
          res ? _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(res + 16 * j)))
              : _mm512_setzero_ps();
      if (!p.residual_after_act) v = _mm512_add_ps(v, r);
      v = activate(v, p.act, p.slopes ? _mm512_set1_ps(p.slopes[i]) : alpha);
      if (p.residual_after_act) v = _mm512_add_ps(v, r);
      if (p.f32_out)  // kept in sum[i], copied out below
        _mm512_store_ps(sum[i] + 16 * j, v);
      else
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + 16 * j),
                            _mm512_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
    }
    if (p.f32_out)
      std::memcpy(static_cast<float*>(c) + i * ldc, sum[i], nc * 4);
    else if (!full)
      std::memcpy(row, tmp_out, nc * 2);
  }
}

}  // namespace voxrt::cpu::gemm_fp16_detail
