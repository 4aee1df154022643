// The gemm microkernel family: one MR x NR tile of C = A * B, A a packed panel of weights, B rows
// found through a table of per-step offsets (a packed panel, or the rows of a zero-padded input,
// which makes convolution an implicit gemm), finished in registers with the convolution epilogue
// (bias, residual, activation) and stored in the storage dtype. The convolution drivers
// (backends/cpu/conv/) pack and tile around it; the table is in gemm_table.cpp.
//
//   const GemmKernel* g = find_gemm_kernel(max_isa(), DType::f32);
//   std::vector<uint8_t> a(packed_a_bytes(*g, m, k)), b(packed_b_bytes(*g, k, n));
//   pack_a(*g, w, k, 1, m, k, a.data());                 // weights, once
//   pack_b(*g, x, n, k, n, b.data());                    // activations, per tile
//   std::vector<int64_t> steps = panel_offsets(*g, k);
//   g->ukernel(mr, nc, k, a.data(), b.data(), steps.data(), y, ldy, GemmParams{});
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "backends/cpu/cpu_features.h"
#include "backends/cpu/kernels/eltwise/activation.h"
#include "voxrt/dtype.h"

namespace voxrt::cpu {

/// The activation a gemm epilogue applies: none, relu or leaky_relu (the elementwise kernels'
/// enum; the epilogues take no other).
using Activation = Act;

/// What a microkernel does after the k loop. Row i of the tile gets bias[i], then the residual
/// tile (storage dtype, C's row stride), then the activation, and is stored in the storage dtype;
/// with residual_after_act the residual is added after the activation instead.
struct GemmParams {
  const float* bias = nullptr;
  const void* residual = nullptr;
  Activation act = Activation::none;
  float alpha = 0.01f;  // LeakyRelu slope
  /// With leaky_relu, row i's own slope (`alpha` unused): a convolution that computes its
  /// siblings' channels too, each with its own activation (FusedConv's `slopes`).
  const float* slopes = nullptr;
  bool residual_after_act = false;
  /// Store fp32 whatever the storage dtype, through the same epilogue (the residual still of the
  /// storage dtype). Without bias and activation, the raw sums (a ConvTranspose's overlapping
  /// taps); with them, a convolution whose fp32 output a Cast would otherwise widen.
  bool f32_out = false;
};

/// Computes rows [0, mr) and columns [0, nc) of one tile, mr <= MR, nc <= NR, over k steps.
/// `a`: packed A micro-panel, MR values per step (rows >= mr are zero). B: step s reads NR
/// contiguous panel elements at `b + b_offsets[s]` (offsets in elements), all finite; a packed
/// micro-panel has offsets s * NR, a padded input row table gives implicit im2col. `c`: row-major
/// with row stride `ldc` elements. Nothing needs alignment; `c` and the residual are written and
/// read only inside [mr, nc).
using GemmUkernel = void (*)(size_t mr, size_t nc, size_t k, const void* a, const void* b,
                             const int64_t* b_offsets, void* c, size_t ldc, const GemmParams& p);

/// Converts `n` contiguous values of the storage dtype into B panel elements. For rows that pack
/// several steps per element (k_pack > 1) it writes one member of each of n consecutive elements:
/// `dst` points at the member of the first, and the next is panel_type_bytes(b_panel) further.
using PanelConvert = void (*)(const void* src, void* dst, size_t n);
/// For rows with k_pack = 2: converts n values of `first` and of `second` (null: zeros) into
/// both members of n consecutive panel elements at `dst`, in one pass (whole-element stores).
using PanelConvertPair = void (*)(const void* first, const void* second, void* dst, size_t n);
/// For rows with k_pack = 2, a stride-2 width split: the even columns 2j of `first` and of
/// `second` (null: zeros) into both members of element j at `even`, the odd columns 2j + 1 into
/// element j at `odd`, j < n (2n values read from each row).
using PanelConvertPairSplit = void (*)(const void* first, const void* second, void* even, void* odd,
                                       size_t n);

/// For rows with k_pack = 1, a stride-2 width split: the even values 2j of `src` converted into
/// n panel elements at `even`, the odd values 2j + 1 into n at `odd`, j < n (2n values read).
using PanelConvertSplit = void (*)(const void* src, void* even, void* odd, size_t n);

/// Element of a packed panel. f16_pair holds each fp16 value twice, so that a 32-bit broadcast
/// (a plain load on x86) fills a vector with it. bf16_pair holds two consecutive steps as bfloat16
/// (the even step in the low half), the operand layout of dot-product instructions (vdpbf16ps).
enum class PanelType : uint8_t { f32, f16, f16_pair, bf16_pair };

size_t panel_type_bytes(PanelType t);

/// One row of the family's table.
struct GemmKernel {
  Isa isa;
  const char* name;  // <dtypes>_gemm_<MR>x<NR>__<isa>
  DType storage;     // dtype of the tensors it serves (X, W, bias, residual, Y)
  PanelType a_panel, b_panel;
  int mr, nr;
  /// fp16 arithmetic: steps summed in fp16 before the partial sum is carried into fp32; 0 when
  /// the kernel sums in fp32 throughout.
  int k_carry;
  /// Steps per panel element: 2 for bf16_pair panels (the ukernel's k counts pairs), else 1.
  int k_pack;
  GemmUkernel ukernel;
  PanelConvert to_panel;
  PanelConvertPair to_panel_pair = nullptr;             // rows with k_pack = 2
  PanelConvertPairSplit to_panel_pair_split = nullptr;  // rows with k_pack = 2
  /// Rows with bf16_pair panels: n values into n consecutive bf16 values at dst, so that
  /// consecutive values pair up as elements (a row's columns 2j and 2j + 1 in element j: width
  /// tap pairs at width stride 2).
  PanelConvert to_bf16_values = nullptr;
  /// Rows whose B panels are the storage's fp16 values widened (fp32 arithmetic with F16C): the
  /// same tile reading B rows as fp16 values, widened as it loads them, so that a driver can
  /// read X's rows in place (1x1 convolutions) rather than pack widened copies.
  GemmUkernel ukernel_f16_b = nullptr;
  PanelConvertSplit to_panel_split = nullptr;  // rows with k_pack = 1
  /// A software stand-in for the row of the same name less `_emulated`, at `isa` but built for
  /// AVX-512F: chosen in its place where that ISA is emulated (avx512fp16_emulated()).
  bool emulated = false;
};

/// The lowest ISA a row's code needs: its level, or AVX-512 for an emulated row.
inline Isa runs_on(const GemmKernel& g) {
  return g.emulated ? Isa::avx512 : g.isa;
}

/// Rows whose products are of bfloat16-rounded operands (FpMath::bf16 only).
inline bool bf16_dot(const GemmKernel& g) {
  return g.a_panel == PanelType::bf16_pair;
}

/// Panel elements of k steps: ceil(k / k_pack), the k a ukernel is called with.
inline int64_t packed_steps(const GemmKernel& g, int64_t k) {
  return (k + g.k_pack - 1) / g.k_pack;
}

/// Every kernel: within each storage dtype, best ISA first, the preferred tile of an ISA first.
std::span<const GemmKernel> gemm_kernels();
/// For `storage`, the best ISA at most `max`, and among its rows the one whose MR wastes the
/// fewest rows on `m` output rows (the first row on ties, or when m is 0); nullptr if none.
/// Rows with bf16 products are candidates only when `allow_bf16`.
const GemmKernel* find_gemm_kernel(Isa max, DType storage, int64_t m = 0, bool allow_bf16 = false);
/// The row named `name`, or nullptr.
const GemmKernel* find_gemm_kernel(const char* name);

/// Bytes of A packed for m rows and k steps: ceil(m / MR) micro-panels of MR x packed_steps(k).
size_t packed_a_bytes(const GemmKernel& g, int64_t m, int64_t k);
/// Bytes of B packed for k steps and n columns: ceil(n / NR) micro-panels of packed_steps(k) x NR.
size_t packed_b_bytes(const GemmKernel& g, int64_t k, int64_t n);

/// Packs A(i, s) = src[i * row_stride + s * step_stride], i < m, s < k, into micro-panels (steps
/// past k of the last element, if k_pack does not divide k, are zero).
void pack_a(const GemmKernel& g, const float* src, int64_t row_stride, int64_t step_stride,
            int64_t m, int64_t k, void* dst);
/// Packs a row-major k x n matrix of the storage dtype (row stride `ld`) into micro-panels,
/// zero-filling the columns past n of the last one (and the steps past k).
void pack_b(const GemmKernel& g, const void* src, int64_t ld, int64_t k, int64_t n, void* dst);

/// b_offsets of a packed micro-panel of k steps: t * NR for each of its packed_steps(k) elements.
std::vector<int64_t> panel_offsets(const GemmKernel& g, int64_t k);

/// The plain reference for any row: the same tile from the same panels (k counts panel elements,
/// as for the ukernel), summed in double (or, for rows with k_carry, emulating fp16 fused
/// multiply-adds with the row's carry into fp32).
/// g and the rows that differ from it only in NR (same ISA, panels, MR and packing): A panels
/// packed for g serve them all.
std::vector<const GemmKernel*> gemm_siblings(const GemmKernel& g);

/// `f16_b`: B holds fp16 values rather than panel elements (GemmKernel::ukernel_f16_b).
void gemm_reference(const GemmKernel& g, size_t mr, size_t nc, size_t k, const void* a,
                    const void* b, const int64_t* b_offsets, void* c, size_t ldc,
                    const GemmParams& p, bool f16_b = false);

}  // namespace voxrt::cpu
