#include "backends/cpu/kernels/softmax/softmax.h"

namespace voxrt::cpu {

const SoftmaxKernels* f32_softmax_avx512();
const SoftmaxKernels* f16_softmax_avx512();
const SoftmaxKernels* f32_softmax_avx2();
const SoftmaxKernels* f16_softmax_avx2();
const SoftmaxKernels* f32_softmax_scalar();
const SoftmaxKernels* f16_softmax_scalar();

namespace {

struct Row {
  Isa isa;
  DType dtype;
  const SoftmaxKernels* (*get)();
};

constexpr Row kRows[] = {
    {Isa::avx512, DType::f32, f32_softmax_avx512}, {Isa::avx512, DType::f16, f16_softmax_avx512},
    {Isa::avx2, DType::f32, f32_softmax_avx2},     {Isa::avx2, DType::f16, f16_softmax_avx2},
    {Isa::scalar, DType::f32, f32_softmax_scalar}, {Isa::scalar, DType::f16, f16_softmax_scalar},
};

}  // namespace

const SoftmaxKernels* softmax_kernels(DType t, Isa isa) {
  for (const Row& r : kRows)
    if (r.dtype == t && r.isa <= isa) return r.get();
  return nullptr;
}

}  // namespace voxrt::cpu
