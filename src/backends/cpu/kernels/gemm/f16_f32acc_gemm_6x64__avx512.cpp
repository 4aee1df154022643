// fp16 storage, fp32 arithmetic (B panels widened while packing by f16_to_f32_panel_avx512).
// The _f16b form reads B rows of fp16 values and widens them as it loads them (1x1
// convolutions read X in place through it).
#include "backends/cpu/kernels/gemm/gemm_avx512.h"
#include "backends/cpu/kernels/gemm/gemm_rows.h"
#include "backends/cpu/kernels/gemm/gemm_tile.h"

namespace voxrt::cpu {

void f16_f32acc_gemm_6x64_avx512(size_t mr, size_t nc, size_t k, const void* a, const void* b,
                                 const int64_t* b_offsets, void* c, size_t ldc,
                                 const GemmParams& p) {
  gemm_detail::gemm_tile<gemm_detail::Avx512, uint16_t, 6, 4>(mr, nc, k, a, b, b_offsets, c, ldc,
                                                              p);
}

void f16_f32acc_gemm_6x64_avx512_f16b(size_t mr, size_t nc, size_t k, const void* a, const void* b,
                                      const int64_t* b_offsets, void* c, size_t ldc,
                                      const GemmParams& p) {
  gemm_detail::gemm_tile<gemm_detail::Avx512, uint16_t, 6, 4, uint16_t>(mr, nc, k, a, b, b_offsets,
                                                                        c, ldc, p);
}

}  // namespace voxrt::cpu
