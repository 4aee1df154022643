#include "backends/cpu/kernels/vec/vec_scalar.h"
#include "backends/cpu/kernels/pool/pool_impl.h"

namespace voxrt::cpu {

const PoolKernels* f32_pool_scalar() {
  static constexpr PoolKernels k = PoolImpl<VecScalar, float>::table("f32_pool__scalar");
  return &k;
}

}  // namespace voxrt::cpu
