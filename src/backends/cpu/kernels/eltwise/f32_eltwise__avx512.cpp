#include "backends/cpu/kernels/vec/vec_avx512.h"
#include "backends/cpu/kernels/eltwise/eltwise_impl.h"

namespace voxrt::cpu {

const EltwiseKernels* f32_eltwise_avx512() {
  static constexpr EltwiseKernels k = EltwiseImpl<VecAvx512, float>::table("f32_eltwise__avx512");
  return &k;
}

const CastKernels* f32_f16_cast_avx512() {
  static constexpr CastKernels k = cast_table<VecAvx512>("f32_f16_cast__avx512");
  return &k;
}

}  // namespace voxrt::cpu
