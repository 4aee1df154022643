// The functions behind the rows of the gemm table (gemm_table.cpp); each is defined in the source
// file named after its row, compiled with that row's ISA flags.
#pragma once

#include "backends/cpu/kernels/gemm/gemm.h"

namespace voxrt::cpu {

#define VOXRT_GEMM_UKERNEL(name)                                          \
  void name(size_t mr, size_t nc, size_t k, const void* a, const void* b, \
            const int64_t* b_offsets, void* c, size_t ldc, const GemmParams& p)

VOXRT_GEMM_UKERNEL(f32_gemm_4x16_scalar);
VOXRT_GEMM_UKERNEL(f16_f32acc_gemm_4x16_scalar);
VOXRT_GEMM_UKERNEL(f16_f32acc_gemm_4x16_scalar_f16b);
VOXRT_GEMM_UKERNEL(f32_gemm_4x24_avx2);
VOXRT_GEMM_UKERNEL(f32_gemm_6x16_avx2);
VOXRT_GEMM_UKERNEL(f16_f32acc_gemm_4x24_avx2);
VOXRT_GEMM_UKERNEL(f16_f32acc_gemm_4x24_avx2_f16b);
VOXRT_GEMM_UKERNEL(f16_f32acc_gemm_6x16_avx2);
VOXRT_GEMM_UKERNEL(f16_f32acc_gemm_6x16_avx2_f16b);
VOXRT_GEMM_UKERNEL(f32_gemm_8x48_avx512);
VOXRT_GEMM_UKERNEL(f32_gemm_8x32_avx512);
VOXRT_GEMM_UKERNEL(f32_gemm_6x64_avx512);
VOXRT_GEMM_UKERNEL(f32_gemm_6x48_avx512);
VOXRT_GEMM_UKERNEL(f32_gemm_3x96_avx512);
VOXRT_GEMM_UKERNEL(f16_f32acc_gemm_8x48_avx512);
VOXRT_GEMM_UKERNEL(f16_f32acc_gemm_8x48_avx512_f16b);
VOXRT_GEMM_UKERNEL(f16_f32acc_gemm_8x32_avx512);
VOXRT_GEMM_UKERNEL(f16_f32acc_gemm_8x32_avx512_f16b);
VOXRT_GEMM_UKERNEL(f16_f32acc_gemm_6x64_avx512);
VOXRT_GEMM_UKERNEL(f16_f32acc_gemm_6x64_avx512_f16b);
VOXRT_GEMM_UKERNEL(f16_f32acc_gemm_6x48_avx512);
VOXRT_GEMM_UKERNEL(f16_f32acc_gemm_6x48_avx512_f16b);
VOXRT_GEMM_UKERNEL(f16_f32acc_gemm_3x96_avx512);
VOXRT_GEMM_UKERNEL(f16_f32acc_gemm_3x96_avx512_f16b);
VOXRT_GEMM_UKERNEL(f16_f16acc_gemm_8x96_avx512fp16);
VOXRT_GEMM_UKERNEL(f16_f16acc_gemm_8x64_avx512fp16);
VOXRT_GEMM_UKERNEL(f16_f16acc_gemm_6x96_avx512fp16);
VOXRT_GEMM_UKERNEL(f16_f16acc_gemm_6x64_avx512fp16);
VOXRT_GEMM_UKERNEL(f16_f16acc_gemm_3x96_avx512fp16);
VOXRT_GEMM_UKERNEL(f16_f16acc_gemm_8x96_emulated_avx512);
VOXRT_GEMM_UKERNEL(f16_f16acc_gemm_8x64_emulated_avx512);
VOXRT_GEMM_UKERNEL(f16_f16acc_gemm_6x96_emulated_avx512);
VOXRT_GEMM_UKERNEL(f16_f16acc_gemm_6x64_emulated_avx512);
VOXRT_GEMM_UKERNEL(f16_f16acc_gemm_3x96_emulated_avx512);
VOXRT_GEMM_UKERNEL(f32_bf16dot_gemm_8x48_avx512bf16);
VOXRT_GEMM_UKERNEL(f32_bf16dot_gemm_8x32_avx512bf16);
VOXRT_GEMM_UKERNEL(f32_bf16dot_gemm_6x64_avx512bf16);
VOXRT_GEMM_UKERNEL(f32_bf16dot_gemm_6x48_avx512bf16);
VOXRT_GEMM_UKERNEL(f32_bf16dot_gemm_3x96_avx512bf16);
VOXRT_GEMM_UKERNEL(f16_bf16dot_gemm_8x48_avx512bf16);
VOXRT_GEMM_UKERNEL(f16_bf16dot_gemm_8x32_avx512bf16);
VOXRT_GEMM_UKERNEL(f16_bf16dot_gemm_6x64_avx512bf16);
VOXRT_GEMM_UKERNEL(f16_bf16dot_gemm_6x48_avx512bf16);
VOXRT_GEMM_UKERNEL(f16_bf16dot_gemm_3x96_avx512bf16);

#undef VOXRT_GEMM_UKERNEL

void copy_f32_panel(const void* src, void* dst, size_t n);
void copy_f16_panel(const void* src, void* dst, size_t n);
void f16_to_f32_panel_scalar(const void* src, void* dst, size_t n);
void f16_to_f32_panel_avx2(const void* src, void* dst, size_t n);
void f16_to_f32_panel_avx512(const void* src, void* dst, size_t n);
// Even and odd values of a row into two panel rows (PanelConvertSplit).
void f32_split_panel_scalar(const void* src, void* even, void* odd, size_t n);
void f32_split_panel_avx2(const void* src, void* even, void* odd, size_t n);
void f32_split_panel_avx512(const void* src, void* even, void* odd, size_t n);
void f16_split_panel_scalar(const void* src, void* even, void* odd, size_t n);
void f16_to_f32_split_panel_scalar(const void* src, void* even, void* odd, size_t n);
void f16_to_f32_split_panel_avx2(const void* src, void* even, void* odd, size_t n);
void f16_to_f32_split_panel_avx512(const void* src, void* even, void* odd, size_t n);
// Into the low half of n consecutive 32-bit words at dst (one member of bf16_pair elements).
void f32_to_bf16_member_avx512bf16(const void* src, void* dst, size_t n);
void f16_to_bf16_member_avx512bf16(const void* src, void* dst, size_t n);
// n consecutive bf16 values (GemmKernel::to_bf16_values).
void f32_to_bf16_values_avx512bf16(const void* src, void* dst, size_t n);
void f16_to_bf16_values_avx512bf16(const void* src, void* dst, size_t n);
// Both members of n bf16_pair elements (PanelConvertPair).
void f32_to_bf16_pair_avx512bf16(const void* first, const void* second, void* dst, size_t n);
void f16_to_bf16_pair_avx512bf16(const void* first, const void* second, void* dst, size_t n);
// Even and odd columns of two rows into two rows of bf16_pair elements (PanelConvertPairSplit).
void f32_to_bf16_pair_split_avx512bf16(const void* first, const void* second, void* even, void* odd,
                                       size_t n);
void f16_to_bf16_pair_split_avx512bf16(const void* first, const void* second, void* even, void* odd,
                                       size_t n);

/// fp16 steps the AVX512-FP16 kernel sums before carrying into fp32.
constexpr int kF16CarrySteps = 64;

}  // namespace voxrt::cpu
