// Eight fp32 lanes on AVX2 + FMA + F16C, with fp16 storage converted on load and store. The
// interface matches vec_scalar.h and vec_avx512.h. Include only from `__avx2` kernel sources:
// everything here is in an anonymous namespace so no AVX2 code is shared with other files.
#pragma once

#include <immintrin.h>

#include <cstdint>

#include "core/half.h"

namespace voxrt::cpu {
namespace {

struct VecAvx2 {
  static constexpr int kWidth = 8;
  static constexpr const char* kIsa = "avx2";
  using V = __m256;
  using M = __m256;

  static __m256i lanes_below(int n) {
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
  }

  static V load(const float* p) { return _mm256_loadu_ps(p); }
  static V load(const Half* p) {
    return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  }
  static V load_partial(const float* p, int n) { return _mm256_maskload_ps(p, lanes_below(n)); }
  // fp16 lanes below n: AVX2 has no 16-bit masked load, so pairs of lanes through a 32-bit one
  // and an odd last lane blended in. Before, a copy into a stack buffer (a libc memcpy, then one
  // 16-byte load across its smaller stores, which the store buffer cannot forward): on Zen 3,
  // while the host was busy, fp16 F(2, 3) layers on 12-wide rows took 1.5 times their fp32 time
  // (64 -> 64 at 12^3: 3.1-3.3 ms against 2.0-2.3; 2.2 after), level with it on a quiet host.
  static V load_partial(const Half* p, int n) {
    __m128i h =
        _mm_maskload_epi32(reinterpret_cast<const int*>(p),
                           _mm_cmpgt_epi32(_mm_set1_epi32(n / 2), _mm_setr_epi32(0, 1, 2, 3)));
    if (n & 1)
      h = _mm_blendv_epi8(h, _mm_set1_epi16(static_cast<short>(p[n - 1].bits)),
                          _mm_cmpeq_epi16(_mm_set1_epi16(static_cast<short>(n - 1)),
                                          _mm_setr_epi16(0, 1, 2, 3, 4, 5, 6, 7)));
    return _mm256_cvtph_ps(h);
  }
  static void store(float* p, V v) { _mm256_storeu_ps(p, v); }
  static void store(Half* p, V v) {
    _mm_storeu_si128(reinterpret_cast<__m128i*>(p), _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT));
  }
  static void store_partial(float* p, V v, int n) { _mm256_maskstore_ps(p, lanes_below(n), v); }
  // fp16 lanes below n (at most 8): four, two and one at a time, as n's bits say.
  static void store_partial(Half* p, V v, int n) {
    __m128i h = _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT);
    if (n >= 8) {
      _mm_storeu_si128(reinterpret_cast<__m128i*>(p), h);
      return;
    }
    if (n & 4) {
      _mm_storel_epi64(reinterpret_cast<__m128i*>(p), h);
      h = _mm_srli_si128(h, 8);
      p += 4;
    }
    if (n & 2) {
      _mm_storeu_si32(p, h);
      h = _mm_srli_si128(h, 4);
      p += 2;
    }
    if (n & 1) p->bits = static_cast<uint16_t>(_mm_extract_epi16(h, 0));
  }
  // Non-temporal stores of a whole vector (see vec_avx512.h).
  static void stream(float* p, V v) { _mm256_stream_ps(p, v); }
  static void stream(Half* p, V v) {
    _mm_stream_si128(reinterpret_cast<__m128i*>(p), _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT));
  }
  static float load1(const float* p) { return *p; }
  static float load1(const Half* p) { return _cvtsh_ss(p->bits); }
  static void store1(float* p, float v) { *p = v; }
  static void store1(Half* p, float v) { p->bits = _cvtss_sh(v, _MM_FROUND_TO_NEAREST_INT); }

  static V set1(float x) { return _mm256_set1_ps(x); }
  static V zero() { return _mm256_setzero_ps(); }
  static V add(V a, V b) { return _mm256_add_ps(a, b); }
  static V sub(V a, V b) { return _mm256_sub_ps(a, b); }
  static V mul(V a, V b) { return _mm256_mul_ps(a, b); }
  static V div(V a, V b) { return _mm256_div_ps(a, b); }
  static V fmadd(V a, V b, V c) { return _mm256_fmadd_ps(a, b, c); }
  static V max(V a, V b) { return _mm256_max_ps(a, b); }
  static V min(V a, V b) { return _mm256_min_ps(a, b); }
  static V round(V a) { return _mm256_round_ps(a, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC); }
  static V pow2(V n) {
    __m256i e = _mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127));
    return _mm256_castsi256_ps(_mm256_slli_epi32(e, 23));
  }

  static M lt(V a, V b) { return _mm256_cmp_ps(a, b, _CMP_LT_OQ); }
  static M ge(V a, V b) { return _mm256_cmp_ps(a, b, _CMP_GE_OQ); }
  static M is_nan(V a) { return _mm256_cmp_ps(a, a, _CMP_UNORD_Q); }
  static M first(int n) { return _mm256_castsi256_ps(lanes_below(n)); }
  static V select(M m, V a, V b) { return _mm256_blendv_ps(b, a, m); }

  static float lane0(V a) { return _mm256_cvtss_f32(a); }
  static float hsum(V a) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(a), _mm256_extractf128_ps(a, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
  }
  static float hmax(V a) {
    __m128 s = _mm_max_ps(_mm256_castps256_ps128(a), _mm256_extractf128_ps(a, 1));
    s = _mm_max_ps(s, _mm_movehl_ps(s, s));
    s = _mm_max_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
  }

  static void deinterleave(V a, V b, V& even, V& odd) {
    even = _mm256_castpd_ps(
        _mm256_permute4x64_pd(_mm256_castps_pd(_mm256_shuffle_ps(a, b, 0x88)), 0xd8));
    odd = _mm256_castpd_ps(
        _mm256_permute4x64_pd(_mm256_castps_pd(_mm256_shuffle_ps(a, b, 0xdd)), 0xd8));
  }
  static void interleave(V even, V odd, V& lo, V& hi) {
    V l = _mm256_unpacklo_ps(even, odd), h = _mm256_unpackhi_ps(even, odd);
    lo = _mm256_permute2f128_ps(l, h, 0x20);
    hi = _mm256_permute2f128_ps(l, h, 0x31);
  }
  // See vec_avx512.h. alignr shifts within 128-bit lanes, so the lane pair is first made of the
  // two vectors' adjoining halves.
  static V shift_up(V cur, V prev) {
    V t = _mm256_permute2f128_ps(prev, cur, 0x21);  // [prev's high half, cur's low half]
    return _mm256_castsi256_ps(
        _mm256_alignr_epi8(_mm256_castps_si256(cur), _mm256_castps_si256(t), 12));
  }
  static V shift_down(V cur, V next) {
    V t = _mm256_permute2f128_ps(cur, next, 0x21);  // [cur's high half, next's low half]
    return _mm256_castsi256_ps(
        _mm256_alignr_epi8(_mm256_castps_si256(t), _mm256_castps_si256(cur), 4));
  }
  static V broadcast_lane(V a, int i) { return _mm256_permutevar8x32_ps(a, _mm256_set1_epi32(i)); }
  static V gather(const float* base, const int32_t* idx) {
    return _mm256_i32gather_ps(base, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(idx)), 4);
  }
};

}  // namespace
}  // namespace voxrt::cpu
