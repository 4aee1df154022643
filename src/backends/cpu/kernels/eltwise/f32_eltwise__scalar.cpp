#include "backends/cpu/kernels/vec/vec_scalar.h"
#include "backends/cpu/kernels/eltwise/eltwise_impl.h"

namespace voxrt::cpu {

const EltwiseKernels* f32_eltwise_scalar() {
  static constexpr EltwiseKernels k = EltwiseImpl<VecScalar, float>::table("f32_eltwise__scalar");
  return &k;
}

const CastKernels* f32_f16_cast_scalar() {
  static constexpr CastKernels k = cast_table<VecScalar>("f32_f16_cast__scalar");
  return &k;
}

}  // namespace voxrt::cpu
