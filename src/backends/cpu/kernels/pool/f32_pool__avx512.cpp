#include "backends/cpu/kernels/vec/vec_avx512.h"
#include "backends/cpu/kernels/pool/pool_impl.h"

namespace voxrt::cpu {

const PoolKernels* f32_pool_avx512() {
  static constexpr PoolKernels k = PoolImpl<VecAvx512, float>::table("f32_pool__avx512");
  return &k;
}

}  // namespace voxrt::cpu
