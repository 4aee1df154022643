#include "backends/cpu/kernels/reduce/reduce.h"

namespace voxrt::cpu {

const ReduceKernels* f32_reduce_avx512();
const ReduceKernels* f16_reduce_avx512();
const ReduceKernels* f32_reduce_avx2();
const ReduceKernels* f16_reduce_avx2();
const ReduceKernels* f32_reduce_scalar();
const ReduceKernels* f16_reduce_scalar();

namespace {

struct Row {
  Isa isa;
  DType dtype;
  const ReduceKernels* (*get)();
};

constexpr Row kRows[] = {
    {Isa::avx512, DType::f32, f32_reduce_avx512}, {Isa::avx512, DType::f16, f16_reduce_avx512},
    {Isa::avx2, DType::f32, f32_reduce_avx2},     {Isa::avx2, DType::f16, f16_reduce_avx2},
    {Isa::scalar, DType::f32, f32_reduce_scalar}, {Isa::scalar, DType::f16, f16_reduce_scalar},
};

}  // namespace

const ReduceKernels* reduce_kernels(DType t, Isa isa) {
  for (const Row& r : kRows)
    if (r.dtype == t && r.isa <= isa) return r.get();
  return nullptr;
}

}  // namespace voxrt::cpu
