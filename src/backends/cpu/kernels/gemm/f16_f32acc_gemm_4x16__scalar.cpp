// fp16 storage, fp32 arithmetic; the _f16b form reads B rows of fp16 values and widens them
// as it loads them (1x1 convolutions read X in place through it).
#include <cstring>

#include "backends/cpu/kernels/gemm/gemm_rows.h"
#include "backends/cpu/kernels/gemm/gemm_scalar.h"
#include "backends/cpu/kernels/gemm/gemm_tile.h"

namespace voxrt::cpu {

void f16_f32acc_gemm_4x16_scalar(size_t mr, size_t nc, size_t k, const void* a, const void* b,
                                 const int64_t* b_offsets, void* c, size_t ldc,
                                 const GemmParams& p) {
  gemm_detail::gemm_tile<gemm_detail::Scalar, uint16_t, 4, 16>(mr, nc, k, a, b, b_offsets, c, ldc,
                                                               p);
}

void f16_f32acc_gemm_4x16_scalar_f16b(size_t mr, size_t nc, size_t k, const void* a, const void* b,
                                      const int64_t* b_offsets, void* c, size_t ldc,
                                      const GemmParams& p) {
  gemm_detail::gemm_tile<gemm_detail::Scalar, uint16_t, 4, 16, uint16_t>(mr, nc, k, a, b, b_offsets,
                                                                         c, ldc, p);
}

void f16_to_f32_panel_scalar(const void* src, void* dst, size_t n) {
  const uint16_t* s = static_cast<const uint16_t*>(src);
  float* d = static_cast<float*>(dst);
  for (size_t i = 0; i < n; ++i) d[i] = half_to_float(s[i]);
}

void copy_f16_panel(const void* src, void* dst, size_t n) {
  std::memcpy(dst, src, n * 2);
}

void f16_to_f32_split_panel_scalar(const void* src, void* even, void* odd, size_t n) {
  gemm_detail::split_panel<gemm_detail::Scalar, uint16_t>(src, even, odd, n);
}

void f16_split_panel_scalar(const void* src, void* even, void* odd, size_t n) {
  const uint16_t* s = static_cast<const uint16_t*>(src);
  uint16_t *e = static_cast<uint16_t*>(even), *o = static_cast<uint16_t*>(odd);
  for (size_t j = 0; j < n; ++j) {
    e[j] = s[2 * j];
    o[j] = s[2 * j + 1];
  }
}

}  // namespace voxrt::cpu
