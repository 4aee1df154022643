#include "backends/cpu/kernels/vec/vec_avx2.h"
#include "backends/cpu/kernels/pool/pool_impl.h"

namespace voxrt::cpu {

const PoolKernels* f32_pool_avx2() {
  static constexpr PoolKernels k = PoolImpl<VecAvx2, float>::table("f32_pool__avx2");
  return &k;
}

}  // namespace voxrt::cpu
