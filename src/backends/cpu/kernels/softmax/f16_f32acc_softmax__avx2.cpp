#include "backends/cpu/kernels/vec/vec_avx2.h"
#include "backends/cpu/kernels/softmax/softmax_impl.h"

namespace voxrt::cpu {

const SoftmaxKernels* f16_softmax_avx2() {
  static constexpr SoftmaxKernels k = SoftmaxImpl<VecAvx2, Half>::table("f16_f32acc_softmax__avx2");
  return &k;
}

}  // namespace voxrt::cpu
