// The bf16 dot-product gemm tile (FpMath::bf16): A and B panels hold pairs of consecutive steps
// as bfloat16 (bf16_pair), and each vdpbf16ps adds both exact products of a pair into an fp32
// sum, twice the multiply rate of fp32 FMA on the same vectors. Sums stay fp32 throughout; the
// epilogue and the storage dtype are those of the fp32-arithmetic rows. Include only from
// __avx512bf16 sources.
#pragma once

#include <immintrin.h>

#include <cstdint>

#include "backends/cpu/kernels/gemm/gemm_avx512.h"
#include "backends/cpu/kernels/gemm/gemm_tile.h"

namespace voxrt::cpu::gemm_detail {

/// C tile = A pairs (MR 32-bit words per step) x B pairs (NR words per step at b_base +
/// b_offsets[step]) over k pair steps, then the epilogue, stored as Out (float or fp16 bits).
/// Rows past mr are neither computed nor stored.
template <class Out, int MR, int NV>
inline void bf16_dot_tile(size_t mr, size_t nc, size_t k, const void* a_panel, const void* b_base,
                          const int64_t* b_offsets, void* c, size_t ldc, const GemmParams& p) {
  using V = Avx512;
  with_rows<MR>(mr, [&](auto rows) {
    constexpr int R = decltype(rows)::value;
    prefetch_residual<V, R, NV * V::W, Out>(p, ldc);
    const int32_t* a = static_cast<const int32_t*>(a_panel);
    const uint32_t* b_rows = static_cast<const uint32_t*>(b_base);
    __m512 acc[R][NV];
#pragma GCC unroll 16
    for (int i = 0; i < R; ++i)
#pragma GCC unroll 8
      for (int j = 0; j < NV; ++j) acc[i][j] = _mm512_setzero_ps();
    for (size_t s = 0; s < k; ++s) {
      const uint32_t* b = b_rows + b_offsets[s];
      __m512bh bv[NV];
#pragma GCC unroll 8
      for (int j = 0; j < NV; ++j) bv[j] = (__m512bh)_mm512_loadu_si512(b + j * V::W);
#pragma GCC unroll 16
      for (int i = 0; i < R; ++i) {
        const __m512bh av = (__m512bh)_mm512_set1_epi32(a[i]);
#pragma GCC unroll 8
        for (int j = 0; j < NV; ++j) acc[i][j] = _mm512_dpbf16_ps(acc[i][j], av, bv[j]);
      }
      a += MR;
    }
    finish<V, Out, R, NV>(acc, mr, nc, c, ldc, p);
  });
}

/// Writes n values, converted by `widen` (16 at a time to fp32) and rounded to bf16 (to nearest
/// even), into the low half of n consecutive 32-bit words at dst; the high halves are kept.
template <class Widen>
inline void to_bf16_member(const void* src, void* dst, size_t n, size_t src_bytes, Widen widen) {
  const uint8_t* s = static_cast<const uint8_t*>(src);
  uint16_t* d = static_cast<uint16_t*>(dst);
  for (size_t j = 0; j < n; j += 16) {
    const size_t left = n - j < 16 ? n - j : 16;
    const __mmask16 in = static_cast<__mmask16>((1u << left) - 1);
    const __m256i h = (__m256i)_mm512_cvtneps_pbh(widen(s + j * src_bytes, in));
    const __mmask32 out = static_cast<__mmask32>(0x55555555u & ((uint64_t{1} << (2 * left)) - 1));
    _mm512_mask_storeu_epi16(d + 2 * j, out, _mm512_cvtepu16_epi32(h));
  }
}

/// The first `count` (at most 32) values at p, widened by `widen` 16 at a time: values 0-15 in
/// `lo`, 16-31 in `hi`, zeros past count (nothing read there).
template <class Widen>
inline void widen_32(const uint8_t* p, size_t count, size_t src_bytes, Widen widen, __m512& lo,
                     __m512& hi) {
  const __mmask16 m0 = static_cast<__mmask16>(count >= 16 ? 0xffffu : (1u << count) - 1);
  const __mmask16 m1 = static_cast<__mmask16>(count <= 16 ? 0u : (1u << (count - 16)) - 1);
  lo = widen(p, m0);
  hi = m1 ? widen(p + 16 * src_bytes, m1) : _mm512_setzero_ps();
}

/// n values, widened by `widen` 16 at a time, into n consecutive bf16 values at dst (to nearest
/// even): consecutive values pair up as the members of bf16_pair elements.
template <class Widen>
inline void to_bf16_values(const void* src, void* dst, size_t n, size_t src_bytes, Widen widen) {
  const uint8_t* s = static_cast<const uint8_t*>(src);
  uint16_t* d = static_cast<uint16_t*>(dst);
  for (size_t j = 0; j < n; j += 32) {
    const size_t left = n - j < 32 ? n - j : 32;
    __m512 lo, hi;
    widen_32(s + j * src_bytes, left, src_bytes, widen, lo, hi);
    const __mmask32 out = static_cast<__mmask32>(left == 32 ? 0xffffffffu : (1u << left) - 1);
    _mm512_mask_storeu_epi16(d + j, out, (__m512i)_mm512_cvtne2ps_pbh(hi, lo));
  }
}

/// Stores 16 bf16_pair elements at dst (those of `mask`): low halves rounded from `lo`, high
/// halves from `hi` (to nearest even).
inline void store_bf16_pairs(uint32_t* dst, __mmask16 mask, __m512 lo, __m512 hi) {
  // vcvtne2ps2bf16 puts `lo`'s 16 values in 16-bit lanes 0-15 and `hi`'s in 16-31; lane 2j of
  // the result takes lane j, lane 2j + 1 lane 16 + j.
  alignas(64) static constexpr uint16_t kInterleave[32] = {
      0, 16, 1, 17, 2,  18, 3,  19, 4,  20, 5,  21, 6,  22, 7,  23,
      8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31};
  const __m512i both = (__m512i)_mm512_cvtne2ps_pbh(hi, lo);
  _mm512_mask_storeu_epi32(dst, mask,
                           _mm512_permutexvar_epi16(_mm512_load_si512(kInterleave), both));
}

/// Writes n bf16_pair elements at dst: the low halves from `first`, the high halves from
/// `second` (zeros when null), each widened by `widen` and rounded to bf16 (to nearest even).
template <class Widen>
inline void to_bf16_pair(const void* first, const void* second, void* dst, size_t n,
                         size_t src_bytes, Widen widen) {
  const uint8_t* lo = static_cast<const uint8_t*>(first);
  const uint8_t* hi = static_cast<const uint8_t*>(second);
  uint32_t* d = static_cast<uint32_t*>(dst);
  for (size_t j = 0; j < n; j += 16) {
    const size_t left = n - j < 16 ? n - j : 16;
    const __mmask16 in = static_cast<__mmask16>((1u << left) - 1);
    const __m512 h = hi ? widen(hi + j * src_bytes, in) : _mm512_setzero_ps();
    store_bf16_pairs(d + j, in, widen(lo + j * src_bytes, in), h);
  }
}

/// to_bf16_pair over the even and the odd columns of two rows at once: element j at `even`
/// takes columns 2j of `first` and `second` (zeros when null), element j at `odd` columns 2j + 1;
/// `widen` converts 16 values at a time to fp32.
template <class Widen>
inline void to_bf16_pair_split(const void* first, const void* second, void* even, void* odd,
                               size_t n, size_t src_bytes, Widen widen) {
  const uint8_t* lo = static_cast<const uint8_t*>(first);
  const uint8_t* hi = static_cast<const uint8_t*>(second);
  uint32_t* de = static_cast<uint32_t*>(even);
  uint32_t* dodd = static_cast<uint32_t*>(odd);
  alignas(64) static constexpr int32_t kEven[16] = {0,  2,  4,  6,  8,  10, 12, 14,
                                                    16, 18, 20, 22, 24, 26, 28, 30};
  alignas(64) static constexpr int32_t kOdd[16] = {1,  3,  5,  7,  9,  11, 13, 15,
                                                   17, 19, 21, 23, 25, 27, 29, 31};
  const __m512i pick_even = _mm512_load_si512(kEven), pick_odd = _mm512_load_si512(kOdd);
  for (size_t j = 0; j < n; j += 16) {
    // Columns 2j .. 2j + 31: 2 * left of them are read.
    const size_t left = n - j < 16 ? n - j : 16;
    const __mmask16 out = static_cast<__mmask16>((1u << left) - 1);
    auto split = [&](const uint8_t* row, __m512& e, __m512& o) {
      __m512 a, b;
      widen_32(row + 2 * j * src_bytes, 2 * left, src_bytes, widen, a, b);
      e = _mm512_permutex2var_ps(a, pick_even, b);
      o = _mm512_permutex2var_ps(a, pick_odd, b);
    };
    __m512 le, lo_odd, he = _mm512_setzero_ps(), ho = _mm512_setzero_ps();
    split(lo, le, lo_odd);
    if (hi) split(hi, he, ho);
    store_bf16_pairs(de + j, out, le, he);
    store_bf16_pairs(dodd + j, out, lo_odd, ho);
  }
}

}  // namespace voxrt::cpu::gemm_detail
