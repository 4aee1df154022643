#include "backends/cpu/kernels/eltwise/eltwise.h"

namespace voxrt::cpu {

const EltwiseKernels* f32_eltwise_avx512();
const EltwiseKernels* f16_eltwise_avx512();
const EltwiseKernels* f32_eltwise_avx2();
const EltwiseKernels* f16_eltwise_avx2();
const EltwiseKernels* f32_eltwise_scalar();
const EltwiseKernels* f16_eltwise_scalar();
const CastKernels* f32_f16_cast_avx512();
const CastKernels* f32_f16_cast_avx2();
const CastKernels* f32_f16_cast_scalar();

namespace {

struct Row {
  Isa isa;
  DType dtype;
  const EltwiseKernels* (*get)();
};

// Best first: the first row the ISA allows wins.
constexpr Row kRows[] = {
    {Isa::avx512, DType::f32, f32_eltwise_avx512}, {Isa::avx512, DType::f16, f16_eltwise_avx512},
    {Isa::avx2, DType::f32, f32_eltwise_avx2},     {Isa::avx2, DType::f16, f16_eltwise_avx2},
    {Isa::scalar, DType::f32, f32_eltwise_scalar}, {Isa::scalar, DType::f16, f16_eltwise_scalar},
};

}  // namespace

const EltwiseKernels* eltwise_kernels(DType t, Isa isa) {
  for (const Row& r : kRows)
    if (r.dtype == t && r.isa <= isa) return r.get();
  return nullptr;
}

const CastKernels& cast_kernels(Isa isa) {
  if (isa >= Isa::avx512) return *f32_f16_cast_avx512();
  if (isa >= Isa::avx2) return *f32_f16_cast_avx2();
  return *f32_f16_cast_scalar();
}

}  // namespace voxrt::cpu
