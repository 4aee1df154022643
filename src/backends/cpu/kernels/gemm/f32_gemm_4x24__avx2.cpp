#include <cstring>

#include "backends/cpu/kernels/gemm/gemm_avx2.h"
#include "backends/cpu/kernels/gemm/gemm_rows.h"
#include "backends/cpu/kernels/gemm/gemm_tile.h"

namespace voxrt::cpu {

void f32_gemm_4x24_avx2(size_t mr, size_t nc, size_t k, const void* a, const void* b,
                        const int64_t* b_offsets, void* c, size_t ldc, const GemmParams& p) {
  gemm_detail::gemm_tile<gemm_detail::Avx2, float, 4, 3>(mr, nc, k, a, b, b_offsets, c, ldc, p);
}

namespace {
// The even and odd values of a (8 values) and b (the next 8), in order.
inline void split8(__m256 a, __m256 b, float* e, float* o) {
  constexpr int kInOrder = _MM_SHUFFLE(3, 1, 2, 0);  // 64-bit lanes 0, 2, 1, 3
  const __m256 ev = _mm256_shuffle_ps(a, b, _MM_SHUFFLE(2, 0, 2, 0));
  const __m256 od = _mm256_shuffle_ps(a, b, _MM_SHUFFLE(3, 1, 3, 1));
  _mm256_storeu_ps(e, _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(ev), kInOrder)));
  _mm256_storeu_ps(o, _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(od), kInOrder)));
}
}  // namespace

// 16 values a step; the tail through a zero-padded copy.
void f32_split_panel_avx2(const void* src, void* even, void* odd, size_t n) {
  const float* s = static_cast<const float*>(src);
  float *e = static_cast<float*>(even), *o = static_cast<float*>(odd);
  size_t j = 0;
  for (; j + 8 <= n; j += 8)
    split8(_mm256_loadu_ps(s + 2 * j), _mm256_loadu_ps(s + 2 * j + 8), e + j, o + j);
  if (j < n) {
    float in[16] = {}, out_e[8], out_o[8];
    std::memcpy(in, s + 2 * j, 2 * (n - j) * sizeof(float));
    split8(_mm256_loadu_ps(in), _mm256_loadu_ps(in + 8), out_e, out_o);
    std::memcpy(e + j, out_e, (n - j) * sizeof(float));
    std::memcpy(o + j, out_o, (n - j) * sizeof(float));
  }
}

}  // namespace voxrt::cpu
