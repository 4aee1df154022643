// Vector traits for gemm_tile.h on AVX-512; include only from __avx512 sources.
#pragma once

#include <immintrin.h>

#include <cstdint>

// GCC 12 reports its own intrinsics' deliberately undefined pass-through vectors (`__Y = __Y`) as
// maybe-uninitialized once they are inlined into the kernels.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

namespace voxrt::cpu::gemm_detail {

struct Avx512 {
  using Vec = __m512;
  static constexpr int W = 16;
  static Vec zero() { return _mm512_setzero_ps(); }
  static Vec set1(float x) { return _mm512_set1_ps(x); }
  static Vec load(const float* p) { return _mm512_loadu_ps(p); }
  static Vec load(const uint16_t* p) {
    return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
  }
  static void store(float* p, Vec v) { _mm512_storeu_ps(p, v); }
  static void store(uint16_t* p, Vec v) {
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(p),
                        _mm512_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
  }
  static Vec fmadd(Vec a, Vec b, Vec c) { return _mm512_fmadd_ps(a, b, c); }
  static Vec add(Vec a, Vec b) { return _mm512_add_ps(a, b); }
  static Vec relu(Vec v) { return _mm512_max_ps(v, _mm512_setzero_ps()); }
  static Vec leaky(Vec v, Vec alpha) {
    return _mm512_mask_mul_ps(v, _mm512_cmp_ps_mask(v, _mm512_setzero_ps(), _CMP_LT_OQ), v, alpha);
  }
  // The even and odd values of a then b (2W values) to e and o, in order: two two-source
  // permutes.
  static void even_odd(Vec a, Vec b, Vec& e, Vec& o) {
    const __m512i even =
        _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
    e = _mm512_permutex2var_ps(a, even, b);
    o = _mm512_permutex2var_ps(a, _mm512_add_epi32(even, _mm512_set1_epi32(1)), b);
  }
  static void store_even_odd(Vec a, Vec b, float* e, float* o) {
    Vec ev, od;
    even_odd(a, b, ev, od);
    _mm512_storeu_ps(e, ev);
    _mm512_storeu_ps(o, od);
  }
  // The first n (at most W) of them.
  static void store_even_odd(Vec a, Vec b, float* e, float* o, size_t n) {
    Vec ev, od;
    even_odd(a, b, ev, od);
    _mm512_mask_storeu_ps(e, first(n), ev);
    _mm512_mask_storeu_ps(o, first(n), od);
  }
  // The first n values at p (zeros after them; nothing past them is read, so a row's tail needs
  // no copy).
  static Vec load_first(const float* p, size_t n) { return _mm512_maskz_loadu_ps(first(n), p); }
  static Vec load_first(const uint16_t* p, size_t n) {
    return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(first(n), p));
  }
  static __mmask16 first(size_t n) {
    return static_cast<__mmask16>(n >= 16 ? 0xffffu : (1u << n) - 1);
  }
};

}  // namespace voxrt::cpu::gemm_detail
