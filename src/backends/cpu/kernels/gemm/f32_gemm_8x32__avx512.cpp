// The 8x48 row's sibling (the same A panels) for output rows that whole 32-lane strips cover in
// place.
#include "backends/cpu/kernels/gemm/gemm_avx512.h"
#include "backends/cpu/kernels/gemm/gemm_rows.h"
#include "backends/cpu/kernels/gemm/gemm_tile.h"

namespace voxrt::cpu {

void f32_gemm_8x32_avx512(size_t mr, size_t nc, size_t k, const void* a, const void* b,
                          const int64_t* b_offsets, void* c, size_t ldc, const GemmParams& p) {
  gemm_detail::gemm_tile<gemm_detail::Avx512, float, 8, 2>(mr, nc, k, a, b, b_offsets, c, ldc, p);
}

}  // namespace voxrt::cpu
