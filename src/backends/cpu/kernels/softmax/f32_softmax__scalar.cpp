#include "backends/cpu/kernels/vec/vec_scalar.h"
#include "backends/cpu/kernels/softmax/softmax_impl.h"

namespace voxrt::cpu {

const SoftmaxKernels* f32_softmax_scalar() {
  static constexpr SoftmaxKernels k = SoftmaxImpl<VecScalar, float>::table("f32_softmax__scalar");
  return &k;
}

}  // namespace voxrt::cpu
