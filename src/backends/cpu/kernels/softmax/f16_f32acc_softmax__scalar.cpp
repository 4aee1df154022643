#include "backends/cpu/kernels/vec/vec_scalar.h"
#include "backends/cpu/kernels/softmax/softmax_impl.h"

namespace voxrt::cpu {

const SoftmaxKernels* f16_softmax_scalar() {
  static constexpr SoftmaxKernels k = SoftmaxImpl<VecScalar, Half>::table("f16_f32acc_softmax__scalar");
  return &k;
}

}  // namespace voxrt::cpu
