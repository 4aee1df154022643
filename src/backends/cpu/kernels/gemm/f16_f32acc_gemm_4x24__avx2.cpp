// fp16 storage, fp32 arithmetic: B panels are widened while packing (f16_to_f32_panel_avx2), the
// epilogue reads the residual and stores the output as fp16 with F16C.
// The _f16b form reads B rows of fp16 values and widens them as it loads them (1x1
// convolutions read X in place through it).
#include <cstring>

#include "backends/cpu/kernels/gemm/gemm_avx2.h"
#include "backends/cpu/kernels/gemm/gemm_rows.h"
#include "backends/cpu/kernels/gemm/gemm_tile.h"

namespace voxrt::cpu {

void f16_f32acc_gemm_4x24_avx2(size_t mr, size_t nc, size_t k, const void* a, const void* b,
                               const int64_t* b_offsets, void* c, size_t ldc, const GemmParams& p) {
  gemm_detail::gemm_tile<gemm_detail::Avx2, uint16_t, 4, 3>(mr, nc, k, a, b, b_offsets, c, ldc, p);
}

void f16_f32acc_gemm_4x24_avx2_f16b(size_t mr, size_t nc, size_t k, const void* a, const void* b,
                                    const int64_t* b_offsets, void* c, size_t ldc,
                                    const GemmParams& p) {
  gemm_detail::gemm_tile<gemm_detail::Avx2, uint16_t, 4, 3, uint16_t>(mr, nc, k, a, b, b_offsets, c,
                                                                      ldc, p);
}

void f16_to_f32_panel_avx2(const void* src, void* dst, size_t n) {
  const uint16_t* s = static_cast<const uint16_t*>(src);
  float* d = static_cast<float*>(dst);
  size_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(d + i,
                     _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i))));
  if (i < n) {
    uint16_t in[8] = {};
    float out[8];
    std::memcpy(in, s + i, (n - i) * sizeof(uint16_t));
    _mm256_storeu_ps(out, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(in))));
    std::memcpy(d + i, out, (n - i) * sizeof(float));
  }
}

void f16_to_f32_split_panel_avx2(const void* src, void* even, void* odd, size_t n) {
  gemm_detail::split_panel<gemm_detail::Avx2, uint16_t>(src, even, odd, n);
}

}  // namespace voxrt::cpu
