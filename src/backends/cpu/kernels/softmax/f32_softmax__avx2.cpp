#include "backends/cpu/kernels/vec/vec_avx2.h"
#include "backends/cpu/kernels/softmax/softmax_impl.h"

namespace voxrt::cpu {

const SoftmaxKernels* f32_softmax_avx2() {
  static constexpr SoftmaxKernels k = SoftmaxImpl<VecAvx2, float>::table("f32_softmax__avx2");
  return &k;
}

}  // namespace voxrt::cpu
