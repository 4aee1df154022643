// fp16 storage, fp32 arithmetic: B panels are widened while packing (f16_to_f32_panel_avx512), the
// epilogue reads the residual and stores the output as fp16.
// The _f16b form reads B rows of fp16 values and widens them as it loads them (1x1
// convolutions read X in place through it).
#include "backends/cpu/kernels/gemm/gemm_avx512.h"
#include "backends/cpu/kernels/gemm/gemm_rows.h"
#include "backends/cpu/kernels/gemm/gemm_tile.h"

namespace voxrt::cpu {

void f16_f32acc_gemm_8x48_avx512(size_t mr, size_t nc, size_t k, const void* a, const void* b,
                                 const int64_t* b_offsets, void* c, size_t ldc,
                                 const GemmParams& p) {
  gemm_detail::gemm_tile<gemm_detail::Avx512, uint16_t, 8, 3>(mr, nc, k, a, b, b_offsets, c, ldc,
                                                              p);
}

void f16_f32acc_gemm_8x48_avx512_f16b(size_t mr, size_t nc, size_t k, const void* a, const void* b,
                                      const int64_t* b_offsets, void* c, size_t ldc,
                                      const GemmParams& p) {
  gemm_detail::gemm_tile<gemm_detail::Avx512, uint16_t, 8, 3, uint16_t>(mr, nc, k, a, b, b_offsets,
                                                                        c, ldc, p);
}

void f16_to_f32_panel_avx512(const void* src, void* dst, size_t n) {
  const uint16_t* s = static_cast<const uint16_t*>(src);
  float* d = static_cast<float*>(dst);
  size_t i = 0;
  for (; i + 16 <= n; i += 16)
    _mm512_storeu_ps(d + i,
                     _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(s + i))));
  if (i < n) {
    __mmask16 m = static_cast<__mmask16>((1u << (n - i)) - 1);
    _mm512_mask_storeu_ps(d + i, m, _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, s + i)));
  }
}

void f16_to_f32_split_panel_avx512(const void* src, void* even, void* odd, size_t n) {
  gemm_detail::split_panel<gemm_detail::Avx512, uint16_t>(src, even, odd, n);
}

}  // namespace voxrt::cpu
