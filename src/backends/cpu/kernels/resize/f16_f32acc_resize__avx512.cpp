#include "backends/cpu/kernels/vec/vec_avx512.h"
#include "backends/cpu/kernels/resize/resize_impl.h"

namespace voxrt::cpu {

const ResizeKernels* f16_resize_avx512() {
  static constexpr ResizeKernels k = ResizeImpl<VecAvx512, Half>::table("f16_f32acc_resize__avx512");
  return &k;
}

}  // namespace voxrt::cpu
