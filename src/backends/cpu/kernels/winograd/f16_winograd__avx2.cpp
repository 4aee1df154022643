#include "backends/cpu/kernels/vec/vec_avx2.h"
#include "backends/cpu/kernels/winograd/winograd_impl.h"

namespace voxrt::cpu {

const WinogradKernels* f16_winograd_avx2() {
  static constexpr WinogradKernels k =
      WinogradImpl<VecAvx2, Half>::table("f16_winograd__avx2", "f16_winograd_f43__avx2");
  return &k;
}

}  // namespace voxrt::cpu
