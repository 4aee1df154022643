#include "backends/cpu/kernels/vec/vec_scalar.h"
#include "backends/cpu/kernels/winograd/winograd_impl.h"

namespace voxrt::cpu {

const WinogradKernels* f16_winograd_scalar() {
  static constexpr WinogradKernels k =
      WinogradImpl<VecScalar, Half>::table("f16_winograd__scalar", "f16_winograd_f43__scalar");
  return &k;
}

}  // namespace voxrt::cpu
