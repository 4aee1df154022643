#include "backends/cpu/kernels/vec/vec_avx2.h"
#include "backends/cpu/kernels/reduce/reduce_impl.h"

namespace voxrt::cpu {

const ReduceKernels* f32_reduce_avx2() {
  static constexpr ReduceKernels k = ReduceImpl<VecAvx2, float>::table("f32_reduce__avx2");
  return &k;
}

}  // namespace voxrt::cpu
