#include "backends/cpu/kernels/winograd/winograd.h"

namespace voxrt::cpu {

const WinogradKernels* f32_winograd_avx512();
const WinogradKernels* f16_winograd_avx512();
const WinogradKernels* f32_winograd_avx2();
const WinogradKernels* f16_winograd_avx2();
const WinogradKernels* f32_winograd_scalar();
const WinogradKernels* f16_winograd_scalar();

namespace {

struct Row {
  Isa isa;
  DType dtype;
  const WinogradKernels* (*get)();
};

// Best first: the first row the ISA allows wins.
constexpr Row kRows[] = {
    {Isa::avx512, DType::f32, f32_winograd_avx512}, {Isa::avx512, DType::f16, f16_winograd_avx512},
    {Isa::avx2, DType::f32, f32_winograd_avx2},     {Isa::avx2, DType::f16, f16_winograd_avx2},
    {Isa::scalar, DType::f32, f32_winograd_scalar}, {Isa::scalar, DType::f16, f16_winograd_scalar},
};

}  // namespace

const WinogradKernels* winograd_kernels(DType t, Isa isa) {
  for (const Row& r : kRows)
    if (r.dtype == t && r.isa <= isa) return r.get();
  return nullptr;
}

}  // namespace voxrt::cpu
