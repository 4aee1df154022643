#include <cstring>

#include "backends/cpu/kernels/gemm/gemm_rows.h"
#include "backends/cpu/kernels/gemm/gemm_scalar.h"
#include "backends/cpu/kernels/gemm/gemm_tile.h"

namespace voxrt::cpu {

void f32_gemm_4x16_scalar(size_t mr, size_t nc, size_t k, const void* a, const void* b,
                          const int64_t* b_offsets, void* c, size_t ldc, const GemmParams& p) {
  gemm_detail::gemm_tile<gemm_detail::Scalar, float, 4, 16>(mr, nc, k, a, b, b_offsets, c, ldc, p);
}

void copy_f32_panel(const void* src, void* dst, size_t n) {
  std::memcpy(dst, src, n * 4);
}

void f32_split_panel_scalar(const void* src, void* even, void* odd, size_t n) {
  gemm_detail::split_panel<gemm_detail::Scalar, float>(src, even, odd, n);
}

}  // namespace voxrt::cpu
