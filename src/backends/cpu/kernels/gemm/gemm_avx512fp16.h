// The AVX512-FP16 instructions as the fp16-arithmetic tile's policy (gemm_f16acc_tile.h).
// Include only from __avx512fp16 sources.
#pragma once

#include <immintrin.h>

#include <cstdint>

#include "backends/cpu/kernels/gemm/gemm_f16acc_tile.h"

namespace voxrt::cpu::gemm_fp16_detail {

struct Avx512Fp16 {
  using V = __m512h;
  static V zero() { return _mm512_setzero_ph(); }
  static V load(const uint16_t* p) { return _mm512_loadu_ph(p); }
  static V broadcast(uint32_t pair) {
    return _mm512_castsi512_ph(_mm512_set1_epi32(static_cast<int>(pair)));
  }
  static V fmadd(V a, V b, V c) { return _mm512_fmadd_ph(a, b, c); }
  static __m512 widen_lo(V v) {
    return _mm512_cvtph_ps(_mm512_castsi512_si256(_mm512_castph_si512(v)));
  }
  static __m512 widen_hi(V v) {
    return _mm512_cvtph_ps(_mm512_extracti64x4_epi64(_mm512_castph_si512(v), 1));
  }
};

}  // namespace voxrt::cpu::gemm_fp16_detail
