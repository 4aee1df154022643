// The B panel converts of the bf16 dot-product rows: storage values into one bf16 member of
// bf16_pair elements, or into consecutive bf16 values (consecutive columns as one element), or
// two rows of them into both members at once, or the even and odd columns of two rows into two
// rows of elements (a stride-2 width split).
#include "backends/cpu/kernels/gemm/gemm_avx512bf16.h"
#include "backends/cpu/kernels/gemm/gemm_rows.h"

namespace voxrt::cpu {

void f32_to_bf16_member_avx512bf16(const void* src, void* dst, size_t n) {
  gemm_detail::to_bf16_member(
      src, dst, n, 4, [](const uint8_t* p, __mmask16 m) { return _mm512_maskz_loadu_ps(m, p); });
}

void f16_to_bf16_member_avx512bf16(const void* src, void* dst, size_t n) {
  gemm_detail::to_bf16_member(src, dst, n, 2, [](const uint8_t* p, __mmask16 m) {
    return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, p));
  });
}

void f32_to_bf16_values_avx512bf16(const void* src, void* dst, size_t n) {
  gemm_detail::to_bf16_values(
      src, dst, n, 4, [](const uint8_t* p, __mmask16 m) { return _mm512_maskz_loadu_ps(m, p); });
}

void f16_to_bf16_values_avx512bf16(const void* src, void* dst, size_t n) {
  gemm_detail::to_bf16_values(src, dst, n, 2, [](const uint8_t* p, __mmask16 m) {
    return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, p));
  });
}

void f32_to_bf16_pair_avx512bf16(const void* first, const void* second, void* dst, size_t n) {
  gemm_detail::to_bf16_pair(first, second, dst, n, 4, [](const uint8_t* p, __mmask16 m) {
    return _mm512_maskz_loadu_ps(m, p);
  });
}

void f16_to_bf16_pair_avx512bf16(const void* first, const void* second, void* dst, size_t n) {
  gemm_detail::to_bf16_pair(first, second, dst, n, 2, [](const uint8_t* p, __mmask16 m) {
    return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, p));
  });
}

void f32_to_bf16_pair_split_avx512bf16(const void* first, const void* second, void* even, void* odd,
                                       size_t n) {
  gemm_detail::to_bf16_pair_split(
      first, second, even, odd, n, 4,
      [](const uint8_t* p, __mmask16 m) { return _mm512_maskz_loadu_ps(m, p); });
}

void f16_to_bf16_pair_split_avx512bf16(const void* first, const void* second, void* even, void* odd,
                                       size_t n) {
  gemm_detail::to_bf16_pair_split(first, second, even, odd, n, 2,
                                  [](const uint8_t* p, __mmask16 m) {
                                    return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, p));
                                  });
}

}  // namespace voxrt::cpu
