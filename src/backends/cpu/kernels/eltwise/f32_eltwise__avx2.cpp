#include "backends/cpu/kernels/vec/vec_avx2.h"
#include "backends/cpu/kernels/eltwise/eltwise_impl.h"

namespace voxrt::cpu {

const EltwiseKernels* f32_eltwise_avx2() {
  static constexpr EltwiseKernels k = EltwiseImpl<VecAvx2, float>::table("f32_eltwise__avx2");
  return &k;
}

const CastKernels* f32_f16_cast_avx2() {
  static constexpr CastKernels k = cast_table<VecAvx2>("f32_f16_cast__avx2");
  return &k;
}

}  // namespace voxrt::cpu
