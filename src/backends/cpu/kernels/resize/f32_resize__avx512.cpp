#include "backends/cpu/kernels/vec/vec_avx512.h"
#include "backends/cpu/kernels/resize/resize_impl.h"

namespace voxrt::cpu {

const ResizeKernels* f32_resize_avx512() {
  static constexpr ResizeKernels k = ResizeImpl<VecAvx512, float>::table("f32_resize__avx512");
  return &k;
}

}  // namespace voxrt::cpu
