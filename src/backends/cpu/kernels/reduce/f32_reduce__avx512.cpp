#include "backends/cpu/kernels/vec/vec_avx512.h"
#include "backends/cpu/kernels/reduce/reduce_impl.h"

namespace voxrt::cpu {

const ReduceKernels* f32_reduce_avx512() {
  static constexpr ReduceKernels k = ReduceImpl<VecAvx512, float>::table("f32_reduce__avx512");
  return &k;
}

}  // namespace voxrt::cpu
