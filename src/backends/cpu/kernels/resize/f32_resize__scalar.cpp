#include "backends/cpu/kernels/vec/vec_scalar.h"
#include "backends/cpu/kernels/resize/resize_impl.h"

namespace voxrt::cpu {

const ResizeKernels* f32_resize_scalar() {
  static constexpr ResizeKernels k = ResizeImpl<VecScalar, float>::table("f32_resize__scalar");
  return &k;
}

}  // namespace voxrt::cpu
