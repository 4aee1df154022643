#include "backends/cpu/kernels/pool/pool.h"

namespace voxrt::cpu {

const PoolKernels* f32_pool_avx512();
const PoolKernels* f16_pool_avx512();
const PoolKernels* f32_pool_avx2();
const PoolKernels* f16_pool_avx2();
const PoolKernels* f32_pool_scalar();
const PoolKernels* f16_pool_scalar();

namespace {

struct Row {
  Isa isa;
  DType dtype;
  const PoolKernels* (*get)();
};

constexpr Row kRows[] = {
    {Isa::avx512, DType::f32, f32_pool_avx512}, {Isa::avx512, DType::f16, f16_pool_avx512},
    {Isa::avx2, DType::f32, f32_pool_avx2},     {Isa::avx2, DType::f16, f16_pool_avx2},
    {Isa::scalar, DType::f32, f32_pool_scalar}, {Isa::scalar, DType::f16, f16_pool_scalar},
};

}  // namespace

const PoolKernels* pool_kernels(DType t, Isa isa) {
  for (const Row& r : kRows)
    if (r.dtype == t && r.isa <= isa) return r.get();
  return nullptr;
}

}  // namespace voxrt::cpu
