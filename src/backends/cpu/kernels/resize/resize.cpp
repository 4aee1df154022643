#include "backends/cpu/kernels/resize/resize.h"

namespace voxrt::cpu {

const ResizeKernels* f32_resize_avx512();
const ResizeKernels* f16_resize_avx512();
const ResizeKernels* f32_resize_avx2();
const ResizeKernels* f16_resize_avx2();
const ResizeKernels* f32_resize_scalar();
const ResizeKernels* f16_resize_scalar();

namespace {

struct Row {
  Isa isa;
  DType dtype;
  const ResizeKernels* (*get)();
};

constexpr Row kRows[] = {
    {Isa::avx512, DType::f32, f32_resize_avx512}, {Isa::avx512, DType::f16, f16_resize_avx512},
    {Isa::avx2, DType::f32, f32_resize_avx2},     {Isa::avx2, DType::f16, f16_resize_avx2},
    {Isa::scalar, DType::f32, f32_resize_scalar}, {Isa::scalar, DType::f16, f16_resize_scalar},
};

}  // namespace

const ResizeKernels* resize_kernels(DType t, Isa isa) {
  for (const Row& r : kRows)
    if (r.dtype == t && r.isa <= isa) return r.get();
  return nullptr;
}

}  // namespace voxrt::cpu
