#include "backends/cpu/kernels/vec/vec_scalar.h"
#include "backends/cpu/kernels/winograd/winograd_impl.h"

namespace voxrt::cpu {

const WinogradKernels* f32_winograd_scalar() {
  static constexpr WinogradKernels k =
      WinogradImpl<VecScalar, float>::table("f32_winograd__scalar");
  return &k;
}

}  // namespace voxrt::cpu
