// Sixteen fp32 lanes on AVX-512 F/BW/VL/DQ, with fp16 storage converted on load and store. The
// interface matches vec_scalar.h and vec_avx2.h. Include only from `__avx512` kernel sources:
// everything here is in an anonymous namespace so no AVX-512 code is shared with other files.
#pragma once

// GCC 12's AVX-512 intrinsics read a deliberately uninitialized register (_mm512_undefined_ps)
// and then warn about it where they are inlined; the pragma must precede the header.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <immintrin.h>

#include <cstdint>

#include "core/half.h"

namespace voxrt::cpu {
namespace {

struct VecAvx512 {
  static constexpr int kWidth = 16;
  static constexpr const char* kIsa = "avx512";
  using V = __m512;
  using M = __mmask16;

  static V load(const float* p) { return _mm512_loadu_ps(p); }
  static V load(const Half* p) {
    return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
  }
  static V load_partial(const float* p, int n) { return _mm512_maskz_loadu_ps(first(n), p); }
  static V load_partial(const Half* p, int n) {
    return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(first(n), p));
  }
  static void store(float* p, V v) { _mm512_storeu_ps(p, v); }
  static void store(Half* p, V v) {
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), _mm512_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT));
  }
  static void store_partial(float* p, V v, int n) { _mm512_mask_storeu_ps(p, first(n), v); }
  static void store_partial(Half* p, V v, int n) {
    _mm256_mask_storeu_epi16(p, first(n), _mm512_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT));
  }
  // Non-temporal stores of a whole vector, past the caches; p aligned to the vector's bytes
  // (kWidth elements of the storage type). The writer fences before others read them.
  static void stream(float* p, V v) { _mm512_stream_ps(p, v); }
  static void stream(Half* p, V v) {
    _mm256_stream_si256(reinterpret_cast<__m256i*>(p),
                        _mm512_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT));
  }
  static float load1(const float* p) { return *p; }
  static float load1(const Half* p) { return _cvtsh_ss(p->bits); }
  static void store1(float* p, float v) { *p = v; }
  static void store1(Half* p, float v) { p->bits = _cvtss_sh(v, _MM_FROUND_TO_NEAREST_INT); }

  static V set1(float x) { return _mm512_set1_ps(x); }
  static V zero() { return _mm512_setzero_ps(); }
  static V add(V a, V b) { return _mm512_add_ps(a, b); }
  static V sub(V a, V b) { return _mm512_sub_ps(a, b); }
  static V mul(V a, V b) { return _mm512_mul_ps(a, b); }
  static V div(V a, V b) { return _mm512_div_ps(a, b); }
  static V fmadd(V a, V b, V c) { return _mm512_fmadd_ps(a, b, c); }
  static V max(V a, V b) { return _mm512_max_ps(a, b); }
  static V min(V a, V b) { return _mm512_min_ps(a, b); }
  static V round(V a) { return _mm512_roundscale_ps(a, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC); }
  static V pow2(V n) {
    __m512i e = _mm512_add_epi32(_mm512_cvtps_epi32(n), _mm512_set1_epi32(127));
    return _mm512_castsi512_ps(_mm512_slli_epi32(e, 23));
  }

  static M lt(V a, V b) { return _mm512_cmp_ps_mask(a, b, _CMP_LT_OQ); }
  static M ge(V a, V b) { return _mm512_cmp_ps_mask(a, b, _CMP_GE_OQ); }
  static M is_nan(V a) { return _mm512_cmp_ps_mask(a, a, _CMP_UNORD_Q); }
  static M first(int n) {
    return n >= 16 ? static_cast<M>(0xffff) : static_cast<M>((1u << (n > 0 ? n : 0)) - 1);
  }
  static V select(M m, V a, V b) { return _mm512_mask_blend_ps(m, b, a); }

  static float lane0(V a) { return _mm512_cvtss_f32(a); }
  static float hsum(V a) { return _mm512_reduce_add_ps(a); }
  static float hmax(V a) { return _mm512_reduce_max_ps(a); }

  static void deinterleave(V a, V b, V& even, V& odd) {
    const __m512i ie = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
    const __m512i io = _mm512_setr_epi32(1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31);
    even = _mm512_permutex2var_ps(a, ie, b);
    odd = _mm512_permutex2var_ps(a, io, b);
  }
  static void interleave(V even, V odd, V& lo, V& hi) {
    const __m512i il = _mm512_setr_epi32(0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23);
    const __m512i ih = _mm512_setr_epi32(8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31);
    lo = _mm512_permutex2var_ps(even, il, odd);
    hi = _mm512_permutex2var_ps(even, ih, odd);
  }
  // [prev[W - 1], cur[0], ..., cur[W - 2]] and [cur[1], ..., cur[W - 1], next[0]]: a row's
  // neighbours one element back and one ahead, across vector boundaries.
  static V shift_up(V cur, V prev) {
    return _mm512_castsi512_ps(
        _mm512_alignr_epi32(_mm512_castps_si512(cur), _mm512_castps_si512(prev), 15));
  }
  static V shift_down(V cur, V next) {
    return _mm512_castsi512_ps(
        _mm512_alignr_epi32(_mm512_castps_si512(next), _mm512_castps_si512(cur), 1));
  }
  // Lane i of a in every lane.
  static V broadcast_lane(V a, int i) { return _mm512_permutexvar_ps(_mm512_set1_epi32(i), a); }
  static V gather(const float* base, const int32_t* idx) {
    return _mm512_i32gather_ps(_mm512_loadu_si512(idx), base, 4);
  }
};

}  // namespace
}  // namespace voxrt::cpu
