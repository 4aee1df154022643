// fp16 storage, fp32 arithmetic (B panels widened while packing by f16_to_f32_panel_avx2).
// The _f16b form reads B rows of fp16 values and widens them as it loads them (1x1
// convolutions read X in place through it).
#include "backends/cpu/kernels/gemm/gemm_avx2.h"
#include "backends/cpu/kernels/gemm/gemm_rows.h"
#include "backends/cpu/kernels/gemm/gemm_tile.h"

namespace voxrt::cpu {

void f16_f32acc_gemm_6x16_avx2(size_t mr, size_t nc, size_t k, const void* a, const void* b,
                               const int64_t* b_offsets, void* c, size_t ldc, const GemmParams& p) {
  gemm_detail::gemm_tile<gemm_detail::Avx2, uint16_t, 6, 2>(mr, nc, k, a, b, b_offsets, c, ldc, p);
}

void f16_f32acc_gemm_6x16_avx2_f16b(size_t mr, size_t nc, size_t k, const void* a, const void* b,
                                    const int64_t* b_offsets, void* c, size_t ldc,
                                    const GemmParams& p) {
  gemm_detail::gemm_tile<gemm_detail::Avx2, uint16_t, 6, 2, uint16_t>(mr, nc, k, a, b, b_offsets, c,
                                                                      ldc, p);
}

}  // namespace voxrt::cpu
