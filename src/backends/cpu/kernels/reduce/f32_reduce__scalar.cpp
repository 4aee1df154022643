#include "backends/cpu/kernels/vec/vec_scalar.h"
#include "backends/cpu/kernels/reduce/reduce_impl.h"

namespace voxrt::cpu {

const ReduceKernels* f32_reduce_scalar() {
  static constexpr ReduceKernels k = ReduceImpl<VecScalar, float>::table("f32_reduce__scalar");
  return &k;
}

}  // namespace voxrt::cpu
