#include "backends/cpu/kernels/vec/vec_avx512.h"
#include "backends/cpu/kernels/softmax/softmax_impl.h"

namespace voxrt::cpu {

const SoftmaxKernels* f16_softmax_avx512() {
  static constexpr SoftmaxKernels k = SoftmaxImpl<VecAvx512, Half>::table("f16_f32acc_softmax__avx512");
  return &k;
}

}  // namespace voxrt::cpu
