#include "backends/cpu/kernels/vec/vec_scalar.h"
#include "backends/cpu/kernels/resize/resize_impl.h"

namespace voxrt::cpu {

const ResizeKernels* f16_resize_scalar() {
  static constexpr ResizeKernels k = ResizeImpl<VecScalar, Half>::table("f16_f32acc_resize__scalar");
  return &k;
}

}  // namespace voxrt::cpu
