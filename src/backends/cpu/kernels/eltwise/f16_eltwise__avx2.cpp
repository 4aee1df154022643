#include "backends/cpu/kernels/vec/vec_avx2.h"
#include "backends/cpu/kernels/eltwise/eltwise_impl.h"

namespace voxrt::cpu {

const EltwiseKernels* f16_eltwise_avx2() {
  static constexpr EltwiseKernels k = EltwiseImpl<VecAvx2, Half>::table("f16_eltwise__avx2");
  return &k;
}

}  // namespace voxrt::cpu
