// The AVX512-FP16 rows' software stand-ins (GemmKernel::emulated): the same tile
// (gemm_f16acc_tile.h) with each fp16 fused multiply-add computed in double and rounded to fp16
// (through fp32, as gemm_reference rounds). AVX-512F code, so that CPUs without AVX512-FP16 run
// the fp16-arithmetic path end to end: the drivers' f16_pair panels, the carry, the epilogue.
// Slow (about a dozen instructions a lane); for tests and for checking a model's fp16-arithmetic
// error (VOXRT_EMULATE_AVX512FP16, cpu_features.h).
#include "backends/cpu/kernels/gemm/gemm_f16acc_tile.h"

namespace voxrt::cpu {

namespace gemm_fp16_detail {
namespace {

// fp16 values held widened (exactly) to fp32, lanes 0-15 in lo.
struct EmulatedFp16 {
  struct V {
    __m512 lo, hi;
  };
  static V zero() { return {_mm512_setzero_ps(), _mm512_setzero_ps()}; }
  static V load(const uint16_t* p) {
    return {_mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p))),
            _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + 16)))};
  }
  static V broadcast(uint32_t pair) {
    const __m512 v = _mm512_cvtph_ps(_mm256_set1_epi16(static_cast<int16_t>(pair & 0xffff)));
    return {v, v};
  }
  // a * b + c for 16 lanes: exact product, one rounding to double, then to fp32 and to fp16.
  static __m512 fmadd16(__m512 a, __m512 b, __m512 c) {
    auto half = [](__m512 v, int upper) {
      return upper ? _mm512_cvtps_pd(_mm512_extractf32x8_ps(v, 1))
                   : _mm512_cvtps_pd(_mm512_castps512_ps256(v));
    };
    const __m256 lo = _mm512_cvtpd_ps(_mm512_fmadd_pd(half(a, 0), half(b, 0), half(c, 0)));
    const __m256 hi = _mm512_cvtpd_ps(_mm512_fmadd_pd(half(a, 1), half(b, 1), half(c, 1)));
    const __m512 f = _mm512_insertf32x8(_mm512_castps256_ps512(lo), hi, 1);
    return _mm512_cvtph_ps(_mm512_cvtps_ph(f, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
  }
  static V fmadd(V a, V b, V c) { return {fmadd16(a.lo, b.lo, c.lo), fmadd16(a.hi, b.hi, c.hi)}; }
  static __m512 widen_lo(V v) { return v.lo; }
  static __m512 widen_hi(V v) { return v.hi; }
};

}  // namespace
}  // namespace gemm_fp16_detail

void f16_f16acc_gemm_8x64_emulated_avx512(size_t mr, size_t nc, size_t k, const void* a,
                                          const void* b, const int64_t* b_offsets, void* c,
                                          size_t ldc, const GemmParams& p) {
  gemm_fp16_detail::f16_gemm_tile<8, gemm_fp16_detail::EmulatedFp16>(mr, nc, k, a, b, b_offsets, c,
                                                                     ldc, p);
}

void f16_f16acc_gemm_6x64_emulated_avx512(size_t mr, size_t nc, size_t k, const void* a,
                                          const void* b, const int64_t* b_offsets, void* c,
                                          size_t ldc, const GemmParams& p) {
  gemm_fp16_detail::f16_gemm_tile<6, gemm_fp16_detail::EmulatedFp16>(mr, nc, k, a, b, b_offsets, c,
                                                                     ldc, p);
}

void f16_f16acc_gemm_8x96_emulated_avx512(size_t mr, size_t nc, size_t k, const void* a,
                                          const void* b, const int64_t* b_offsets, void* c,
                                          size_t ldc, const GemmParams& p) {
  gemm_fp16_detail::f16_gemm_tile<8, gemm_fp16_detail::EmulatedFp16, 3>(mr, nc, k, a, b, b_offsets,
                                                                        c, ldc, p);
}

void f16_f16acc_gemm_6x96_emulated_avx512(size_t mr, size_t nc, size_t k, const void* a,
                                          const void* b, const int64_t* b_offsets, void* c,
                                          size_t ldc, const GemmParams& p) {
  gemm_fp16_detail::f16_gemm_tile<6, gemm_fp16_detail::EmulatedFp16, 3>(mr, nc, k, a, b, b_offsets,
                                                                        c, ldc, p);
}

void f16_f16acc_gemm_3x96_emulated_avx512(size_t mr, size_t nc, size_t k, const void* a,
                                          const void* b, const int64_t* b_offsets, void* c,
                                          size_t ldc, const GemmParams& p) {
  gemm_fp16_detail::f16_gemm_tile<3, gemm_fp16_detail::EmulatedFp16, 3>(mr, nc, k, a, b, b_offsets,
                                                                        c, ldc, p);
}

}  // namespace voxrt::cpu
