#include "backends/cpu/kernels/vec/vec_avx512.h"
#include "backends/cpu/kernels/eltwise/eltwise_impl.h"

namespace voxrt::cpu {

const EltwiseKernels* f16_eltwise_avx512() {
  static constexpr EltwiseKernels k = EltwiseImpl<VecAvx512, Half>::table("f16_eltwise__avx512");
  return &k;
}

}  // namespace voxrt::cpu
