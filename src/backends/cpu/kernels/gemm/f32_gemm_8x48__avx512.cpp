#include "backends/cpu/kernels/gemm/gemm_avx512.h"
#include "backends/cpu/kernels/gemm/gemm_rows.h"
#include "backends/cpu/kernels/gemm/gemm_tile.h"

namespace voxrt::cpu {

void f32_gemm_8x48_avx512(size_t mr, size_t nc, size_t k, const void* a, const void* b,
                          const int64_t* b_offsets, void* c, size_t ldc, const GemmParams& p) {
  gemm_detail::gemm_tile<gemm_detail::Avx512, float, 8, 3>(mr, nc, k, a, b, b_offsets, c, ldc, p);
}

void f32_split_panel_avx512(const void* src, void* even, void* odd, size_t n) {
  gemm_detail::split_panel<gemm_detail::Avx512, float>(src, even, odd, n);
}

}  // namespace voxrt::cpu
