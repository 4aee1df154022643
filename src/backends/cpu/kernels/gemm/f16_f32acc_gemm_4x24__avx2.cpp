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

namespace {
// The even and odd values of 16 fp16 values, widened, in order.
inline void split16(__m256i v, float* e, float* o) {
  constexpr int kInOrder = _MM_SHUFFLE(3, 1, 2, 0);  // 64-bit lanes 0, 2, 1, 3
  const __m256 a = _mm256_cvtph_ps(_mm256_castsi256_si128(v));
  const __m256 b = _mm256_cvtph_ps(_mm256_extracti128_si256(v, 1));
  const __m256 ev = _mm256_shuffle_ps(a, b, _MM_SHUFFLE(2, 0, 2, 0));
  const __m256 od = _mm256_shuffle_ps(a, b, _MM_SHUFFLE(3, 1, 3, 1));
  _mm256_storeu_ps(e, _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(ev), kInOrder)));
  _mm256_storeu_ps(o, _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(od), kInOrder)));
}
}  // namespace

// 16 values a step; the tail through a zero-padded copy.
void f16_to_f32_split_panel_avx2(const void* src, void* even, void* odd, size_t n) {
  const uint16_t* s = static_cast<const uint16_t*>(src);
  float *e = static_cast<float*>(even), *o = static_cast<float*>(odd);
  size_t j = 0;
  for (; j + 8 <= n; j += 8)
    split16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(s + 2 * j)), e + j, o + j);
  if (j < n) {
    uint16_t in[16] = {};
    float out_e[8], out_o[8];
    std::memcpy(in, s + 2 * j, 2 * (n - j) * sizeof(uint16_t));
    split16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(in)), out_e, out_o);
    std::memcpy(e + j, out_e, (n - j) * sizeof(float));
    std::memcpy(o + j, out_o, (n - j) * sizeof(float));
  }
}

}  // namespace voxrt::cpu
