#include "backends/cpu/kernels/vec/vec_avx2.h"
#include "backends/cpu/kernels/resize/resize_impl.h"

namespace voxrt::cpu {

const ResizeKernels* f32_resize_avx2() {
  static constexpr ResizeKernels k = ResizeImpl<VecAvx2, float>::table("f32_resize__avx2");
  return &k;
}

}  // namespace voxrt::cpu
