// Vector traits for gemm_tile.h on AVX2 + FMA + F16C; include only from __avx2 sources.
#pragma once

#include <immintrin.h>

#include <cstdint>

namespace voxrt::cpu::gemm_detail {

struct Avx2 {
  using Vec = __m256;
  static constexpr int W = 8;
  static Vec zero() { return _mm256_setzero_ps(); }
  static Vec set1(float x) { return _mm256_set1_ps(x); }
  static Vec load(const float* p) { return _mm256_loadu_ps(p); }
  static Vec load(const uint16_t* p) {
    return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  }
  static void store(float* p, Vec v) { _mm256_storeu_ps(p, v); }
  static void store(uint16_t* p, Vec v) {
    _mm_storeu_si128(reinterpret_cast<__m128i*>(p),
                     _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
  }
  static Vec fmadd(Vec a, Vec b, Vec c) { return _mm256_fmadd_ps(a, b, c); }
  static Vec add(Vec a, Vec b) { return _mm256_add_ps(a, b); }
  static Vec relu(Vec v) { return _mm256_max_ps(v, _mm256_setzero_ps()); }
  static Vec leaky(Vec v, Vec alpha) {
    return _mm256_blendv_ps(v, _mm256_mul_ps(v, alpha),
                            _mm256_cmp_ps(v, _mm256_setzero_ps(), _CMP_LT_OQ));
  }
  // The even and odd values of a then b (2W values) to e and o, in order: shuffles within
  // 128-bit lanes, then the 64-bit lanes put in order (0, 2, 1, 3).
  static void store_even_odd(Vec a, Vec b, float* e, float* o) {
    constexpr int kInOrder = _MM_SHUFFLE(3, 1, 2, 0);
    const __m256 ev = _mm256_shuffle_ps(a, b, _MM_SHUFFLE(2, 0, 2, 0));
    const __m256 od = _mm256_shuffle_ps(a, b, _MM_SHUFFLE(3, 1, 3, 1));
    _mm256_storeu_ps(e, _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(ev), kInOrder)));
    _mm256_storeu_ps(o, _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(od), kInOrder)));
  }
};

}  // namespace voxrt::cpu::gemm_detail
