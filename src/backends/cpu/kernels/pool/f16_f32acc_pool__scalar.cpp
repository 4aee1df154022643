#include "backends/cpu/kernels/vec/vec_scalar.h"
#include "backends/cpu/kernels/pool/pool_impl.h"

namespace voxrt::cpu {

const PoolKernels* f16_pool_scalar() {
  static constexpr PoolKernels k = PoolImpl<VecScalar, Half>::table("f16_f32acc_pool__scalar");
  return &k;
}

}  // namespace voxrt::cpu
