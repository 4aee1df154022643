#include "backends/cpu/kernels/vec/vec_scalar.h"
#include "backends/cpu/kernels/eltwise/eltwise_impl.h"

namespace voxrt::cpu {

const EltwiseKernels* f16_eltwise_scalar() {
  static constexpr EltwiseKernels k = EltwiseImpl<VecScalar, Half>::table("f16_eltwise__scalar");
  return &k;
}

}  // namespace voxrt::cpu
