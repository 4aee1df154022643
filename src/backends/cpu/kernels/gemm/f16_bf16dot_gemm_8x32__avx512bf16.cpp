// The 8x48 bf16-product row's sibling for output rows that whole 32-lane strips cover in place.
#include "backends/cpu/kernels/gemm/gemm_avx512bf16.h"
#include "backends/cpu/kernels/gemm/gemm_rows.h"

namespace voxrt::cpu {

void f16_bf16dot_gemm_8x32_avx512bf16(size_t mr, size_t nc, size_t k, const void* a, const void* b,
                                      const int64_t* b_offsets, void* c, size_t ldc,
                                      const GemmParams& p) {
  gemm_detail::bf16_dot_tile<uint16_t, 8, 2>(mr, nc, k, a, b, b_offsets, c, ldc, p);
}

}  // namespace voxrt::cpu
