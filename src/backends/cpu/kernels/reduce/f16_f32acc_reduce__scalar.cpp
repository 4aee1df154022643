#include "backends/cpu/kernels/vec/vec_scalar.h"
#include "backends/cpu/kernels/reduce/reduce_impl.h"

namespace voxrt::cpu {

const ReduceKernels* f16_reduce_scalar() {
  static constexpr ReduceKernels k = ReduceImpl<VecScalar, Half>::table("f16_f32acc_reduce__scalar");
  return &k;
}

}  // namespace voxrt::cpu
