#include "backends/cpu/kernels/gemm/gemm_avx512.h"
#include "backends/cpu/kernels/gemm/gemm_rows.h"
#include "backends/cpu/kernels/gemm/gemm_tile.h"

namespace voxrt::cpu {

void f32_gemm_8x48_avx512(size_t mr, size_t nc, size_t k, const void* a, const void* b,
                          const int64_t* b_offsets, void* c, size_t ldc, const GemmParams& p) {
  gemm_detail::gemm_tile<gemm_detail::Avx512, float, 8, 3>(mr, nc, k, a, b, b_offsets, c, ldc, p);
}

// 32 values a step, two loads and two two-source permutes; the tail through masks.
void f32_split_panel_avx512(const void* src, void* even, void* odd, size_t n) {
  const float* s = static_cast<const float*>(src);
  float *e = static_cast<float*>(even), *o = static_cast<float*>(odd);
  const __m512i pick_even =
      _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
  const __m512i pick_odd = _mm512_add_epi32(pick_even, _mm512_set1_epi32(1));
  size_t j = 0;
  for (; j + 16 <= n; j += 16) {
    const __m512 a = _mm512_loadu_ps(s + 2 * j), b = _mm512_loadu_ps(s + 2 * j + 16);
    _mm512_storeu_ps(e + j, _mm512_permutex2var_ps(a, pick_even, b));
    _mm512_storeu_ps(o + j, _mm512_permutex2var_ps(a, pick_odd, b));
  }
  if (j < n) {
    const size_t r = n - j;  // under 16: 2r values left
    const __mmask16 lo = static_cast<__mmask16>(r >= 8 ? 0xffffu : (1u << (2 * r)) - 1);
    const __mmask16 hi = static_cast<__mmask16>(r > 8 ? (1u << (2 * r - 16)) - 1 : 0);
    const __m512 a = _mm512_maskz_loadu_ps(lo, s + 2 * j);
    const __m512 b = _mm512_maskz_loadu_ps(hi, s + 2 * j + 16);
    const __mmask16 m = static_cast<__mmask16>((1u << r) - 1);
    _mm512_mask_storeu_ps(e + j, m, _mm512_permutex2var_ps(a, pick_even, b));
    _mm512_mask_storeu_ps(o + j, m, _mm512_permutex2var_ps(a, pick_odd, b));
  }
}

}  // namespace voxrt::cpu
