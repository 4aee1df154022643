#include "backends/cpu/kernels/gemm/gemm_avx512fp16.h"

namespace voxrt::cpu {

void f16_f16acc_gemm_6x96_avx512fp16(size_t mr, size_t nc, size_t k, const void* a, const void* b,
                                     const int64_t* b_offsets, void* c, size_t ldc,
                                     const GemmParams& p) {
  gemm_fp16_detail::f16_gemm_tile<6, gemm_fp16_detail::Avx512Fp16, 3>(mr, nc, k, a, b, b_offsets, c,
                                                                      ldc, p);
}

}  // namespace voxrt::cpu
