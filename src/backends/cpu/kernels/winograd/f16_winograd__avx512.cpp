#include "backends/cpu/kernels/vec/vec_avx512.h"
#include "backends/cpu/kernels/winograd/winograd_impl.h"

namespace voxrt::cpu {

const WinogradKernels* f16_winograd_avx512() {
  static constexpr WinogradKernels k =
      WinogradImpl<VecAvx512, Half>::table("f16_winograd__avx512", "f16_winograd_f43__avx512");
  return &k;
}

}  // namespace voxrt::cpu
