// The gemm family's table, and the packing that puts matrices into its rows' panel layouts.
#include <algorithm>
#include <cstring>
#include <vector>

#include "backends/cpu/kernels/gemm/gemm.h"
#include "backends/cpu/kernels/gemm/gemm_rows.h"
#include "core/half.h"

namespace voxrt::cpu {

namespace {

// Within each storage dtype, best ISA first; within an ISA, the preferred tile first, then tiles
// whose row counts fit other output channel counts (3, 6, 12...). The bf16 dot-product rows
// (FpMath::bf16) rank by their ISA like the others but are skipped unless asked for. A 6x48 row
// follows each 6x64 one: the same A panels, for output rows that 48 lanes fit better (96, 48:
// whole strips written in place), and an 8x32 row each AVX-512 8x48 one, for rows of 32, 64,
// 128 and 256 (2D UNets, 3D patches of 128^3) and short padded rows 32 lanes waste less of
// (stride-2 layers to 24^3 and 12^3); find_gemm_kernel never picks a sibling first,
// the direct conv chooses between them per input shape (gemm_siblings).
constexpr GemmKernel kKernels[] = {
    {Isa::avx512bf16, "f32_bf16dot_gemm_8x48__avx512bf16", DType::f32, PanelType::bf16_pair,
     PanelType::bf16_pair, 8, 48, 0, 2, f32_bf16dot_gemm_8x48_avx512bf16,
     f32_to_bf16_member_avx512bf16, f32_to_bf16_pair_avx512bf16, f32_to_bf16_pair_split_avx512bf16,
     f32_to_bf16_values_avx512bf16},
    {Isa::avx512bf16, "f32_bf16dot_gemm_8x32__avx512bf16", DType::f32, PanelType::bf16_pair,
     PanelType::bf16_pair, 8, 32, 0, 2, f32_bf16dot_gemm_8x32_avx512bf16,
     f32_to_bf16_member_avx512bf16, f32_to_bf16_pair_avx512bf16, f32_to_bf16_pair_split_avx512bf16,
     f32_to_bf16_values_avx512bf16},
    {Isa::avx512bf16, "f32_bf16dot_gemm_6x64__avx512bf16", DType::f32, PanelType::bf16_pair,
     PanelType::bf16_pair, 6, 64, 0, 2, f32_bf16dot_gemm_6x64_avx512bf16,
     f32_to_bf16_member_avx512bf16, f32_to_bf16_pair_avx512bf16, f32_to_bf16_pair_split_avx512bf16,
     f32_to_bf16_values_avx512bf16},
    {Isa::avx512bf16, "f32_bf16dot_gemm_6x48__avx512bf16", DType::f32, PanelType::bf16_pair,
     PanelType::bf16_pair, 6, 48, 0, 2, f32_bf16dot_gemm_6x48_avx512bf16,
     f32_to_bf16_member_avx512bf16, f32_to_bf16_pair_avx512bf16, f32_to_bf16_pair_split_avx512bf16,
     f32_to_bf16_values_avx512bf16},
    {Isa::avx512bf16, "f32_bf16dot_gemm_3x96__avx512bf16", DType::f32, PanelType::bf16_pair,
     PanelType::bf16_pair, 3, 96, 0, 2, f32_bf16dot_gemm_3x96_avx512bf16,
     f32_to_bf16_member_avx512bf16, f32_to_bf16_pair_avx512bf16, f32_to_bf16_pair_split_avx512bf16,
     f32_to_bf16_values_avx512bf16},
    {Isa::avx512, "f32_gemm_8x48__avx512", DType::f32, PanelType::f32, PanelType::f32, 8, 48, 0, 1,
     f32_gemm_8x48_avx512, copy_f32_panel, nullptr, nullptr, nullptr, nullptr,
     f32_split_panel_avx512},
    {Isa::avx512, "f32_gemm_8x32__avx512", DType::f32, PanelType::f32, PanelType::f32, 8, 32, 0, 1,
     f32_gemm_8x32_avx512, copy_f32_panel, nullptr, nullptr, nullptr, nullptr,
     f32_split_panel_avx512},
    {Isa::avx512, "f32_gemm_6x64__avx512", DType::f32, PanelType::f32, PanelType::f32, 6, 64, 0, 1,
     f32_gemm_6x64_avx512, copy_f32_panel, nullptr, nullptr, nullptr, nullptr,
     f32_split_panel_avx512},
    {Isa::avx512, "f32_gemm_6x48__avx512", DType::f32, PanelType::f32, PanelType::f32, 6, 48, 0, 1,
     f32_gemm_6x48_avx512, copy_f32_panel, nullptr, nullptr, nullptr, nullptr,
     f32_split_panel_avx512},
    {Isa::avx512, "f32_gemm_3x96__avx512", DType::f32, PanelType::f32, PanelType::f32, 3, 96, 0, 1,
     f32_gemm_3x96_avx512, copy_f32_panel, nullptr, nullptr, nullptr, nullptr,
     f32_split_panel_avx512},
    {Isa::avx2, "f32_gemm_4x24__avx2", DType::f32, PanelType::f32, PanelType::f32, 4, 24, 0, 1,
     f32_gemm_4x24_avx2, copy_f32_panel, nullptr, nullptr, nullptr, nullptr, f32_split_panel_avx2},
    {Isa::avx2, "f32_gemm_6x16__avx2", DType::f32, PanelType::f32, PanelType::f32, 6, 16, 0, 1,
     f32_gemm_6x16_avx2, copy_f32_panel, nullptr, nullptr, nullptr, nullptr, f32_split_panel_avx2},
    {Isa::scalar, "f32_gemm_4x16__scalar", DType::f32, PanelType::f32, PanelType::f32, 4, 16, 0, 1,
     f32_gemm_4x16_scalar, copy_f32_panel, nullptr, nullptr, nullptr, nullptr,
     f32_split_panel_scalar},
    {Isa::avx512fp16, "f16_f16acc_gemm_8x96__avx512fp16", DType::f16, PanelType::f16_pair,
     PanelType::f16, 8, 96, kF16CarrySteps, 1, f16_f16acc_gemm_8x96_avx512fp16, copy_f16_panel,
     nullptr, nullptr, nullptr, nullptr, f16_split_panel_scalar},
    {Isa::avx512fp16, "f16_f16acc_gemm_8x64__avx512fp16", DType::f16, PanelType::f16_pair,
     PanelType::f16, 8, 64, kF16CarrySteps, 1, f16_f16acc_gemm_8x64_avx512fp16, copy_f16_panel,
     nullptr, nullptr, nullptr, nullptr, f16_split_panel_scalar},
    {Isa::avx512fp16, "f16_f16acc_gemm_6x96__avx512fp16", DType::f16, PanelType::f16_pair,
     PanelType::f16, 6, 96, kF16CarrySteps, 1, f16_f16acc_gemm_6x96_avx512fp16, copy_f16_panel,
     nullptr, nullptr, nullptr, nullptr, f16_split_panel_scalar},
    {Isa::avx512fp16, "f16_f16acc_gemm_6x64__avx512fp16", DType::f16, PanelType::f16_pair,
     PanelType::f16, 6, 64, kF16CarrySteps, 1, f16_f16acc_gemm_6x64_avx512fp16, copy_f16_panel,
     nullptr, nullptr, nullptr, nullptr, f16_split_panel_scalar},
    {Isa::avx512fp16, "f16_f16acc_gemm_3x96__avx512fp16", DType::f16, PanelType::f16_pair,
     PanelType::f16, 3, 96, kF16CarrySteps, 1, f16_f16acc_gemm_3x96_avx512fp16, copy_f16_panel,
     nullptr, nullptr, nullptr, nullptr, f16_split_panel_scalar},
    // Their stand-ins, each after the row it replaces where AVX512-FP16 is emulated.
    {Isa::avx512fp16, "f16_f16acc_gemm_8x96__avx512fp16_emulated", DType::f16, PanelType::f16_pair,
     PanelType::f16, 8, 96, kF16CarrySteps, 1, f16_f16acc_gemm_8x96_emulated_avx512, copy_f16_panel,
     nullptr, nullptr, nullptr, nullptr, f16_split_panel_scalar, true},
    {Isa::avx512fp16, "f16_f16acc_gemm_8x64__avx512fp16_emulated", DType::f16, PanelType::f16_pair,
     PanelType::f16, 8, 64, kF16CarrySteps, 1, f16_f16acc_gemm_8x64_emulated_avx512, copy_f16_panel,
     nullptr, nullptr, nullptr, nullptr, f16_split_panel_scalar, true},
    {Isa::avx512fp16, "f16_f16acc_gemm_6x96__avx512fp16_emulated", DType::f16, PanelType::f16_pair,
     PanelType::f16, 6, 96, kF16CarrySteps, 1, f16_f16acc_gemm_6x96_emulated_avx512, copy_f16_panel,
     nullptr, nullptr, nullptr, nullptr, f16_split_panel_scalar, true},
    {Isa::avx512fp16, "f16_f16acc_gemm_6x64__avx512fp16_emulated", DType::f16, PanelType::f16_pair,
     PanelType::f16, 6, 64, kF16CarrySteps, 1, f16_f16acc_gemm_6x64_emulated_avx512, copy_f16_panel,
     nullptr, nullptr, nullptr, nullptr, f16_split_panel_scalar, true},
    {Isa::avx512fp16, "f16_f16acc_gemm_3x96__avx512fp16_emulated", DType::f16, PanelType::f16_pair,
     PanelType::f16, 3, 96, kF16CarrySteps, 1, f16_f16acc_gemm_3x96_emulated_avx512, copy_f16_panel,
     nullptr, nullptr, nullptr, nullptr, f16_split_panel_scalar, true},
    {Isa::avx512bf16, "f16_bf16dot_gemm_8x48__avx512bf16", DType::f16, PanelType::bf16_pair,
     PanelType::bf16_pair, 8, 48, 0, 2, f16_bf16dot_gemm_8x48_avx512bf16,
     f16_to_bf16_member_avx512bf16, f16_to_bf16_pair_avx512bf16, f16_to_bf16_pair_split_avx512bf16,
     f16_to_bf16_values_avx512bf16},
    {Isa::avx512bf16, "f16_bf16dot_gemm_8x32__avx512bf16", DType::f16, PanelType::bf16_pair,
     PanelType::bf16_pair, 8, 32, 0, 2, f16_bf16dot_gemm_8x32_avx512bf16,
     f16_to_bf16_member_avx512bf16, f16_to_bf16_pair_avx512bf16, f16_to_bf16_pair_split_avx512bf16,
     f16_to_bf16_values_avx512bf16},
    {Isa::avx512bf16, "f16_bf16dot_gemm_6x64__avx512bf16", DType::f16, PanelType::bf16_pair,
     PanelType::bf16_pair, 6, 64, 0, 2, f16_bf16dot_gemm_6x64_avx512bf16,
     f16_to_bf16_member_avx512bf16, f16_to_bf16_pair_avx512bf16, f16_to_bf16_pair_split_avx512bf16,
     f16_to_bf16_values_avx512bf16},
    {Isa::avx512bf16, "f16_bf16dot_gemm_6x48__avx512bf16", DType::f16, PanelType::bf16_pair,
     PanelType::bf16_pair, 6, 48, 0, 2, f16_bf16dot_gemm_6x48_avx512bf16,
     f16_to_bf16_member_avx512bf16, f16_to_bf16_pair_avx512bf16, f16_to_bf16_pair_split_avx512bf16,
     f16_to_bf16_values_avx512bf16},
    {Isa::avx512bf16, "f16_bf16dot_gemm_3x96__avx512bf16", DType::f16, PanelType::bf16_pair,
     PanelType::bf16_pair, 3, 96, 0, 2, f16_bf16dot_gemm_3x96_avx512bf16,
     f16_to_bf16_member_avx512bf16, f16_to_bf16_pair_avx512bf16, f16_to_bf16_pair_split_avx512bf16,
     f16_to_bf16_values_avx512bf16},
    {Isa::avx512, "f16_f32acc_gemm_8x48__avx512", DType::f16, PanelType::f32, PanelType::f32, 8, 48,
     0, 1, f16_f32acc_gemm_8x48_avx512, f16_to_f32_panel_avx512, nullptr, nullptr, nullptr,
     f16_f32acc_gemm_8x48_avx512_f16b, f16_to_f32_split_panel_avx512},
    {Isa::avx512, "f16_f32acc_gemm_8x32__avx512", DType::f16, PanelType::f32, PanelType::f32, 8, 32,
     0, 1, f16_f32acc_gemm_8x32_avx512, f16_to_f32_panel_avx512, nullptr, nullptr, nullptr,
     f16_f32acc_gemm_8x32_avx512_f16b, f16_to_f32_split_panel_avx512},
    {Isa::avx512, "f16_f32acc_gemm_6x64__avx512", DType::f16, PanelType::f32, PanelType::f32, 6, 64,
     0, 1, f16_f32acc_gemm_6x64_avx512, f16_to_f32_panel_avx512, nullptr, nullptr, nullptr,
     f16_f32acc_gemm_6x64_avx512_f16b, f16_to_f32_split_panel_avx512},
    {Isa::avx512, "f16_f32acc_gemm_6x48__avx512", DType::f16, PanelType::f32, PanelType::f32, 6, 48,
     0, 1, f16_f32acc_gemm_6x48_avx512, f16_to_f32_panel_avx512, nullptr, nullptr, nullptr,
     f16_f32acc_gemm_6x48_avx512_f16b, f16_to_f32_split_panel_avx512},
    {Isa::avx512, "f16_f32acc_gemm_3x96__avx512", DType::f16, PanelType::f32, PanelType::f32, 3, 96,
     0, 1, f16_f32acc_gemm_3x96_avx512, f16_to_f32_panel_avx512, nullptr, nullptr, nullptr,
     f16_f32acc_gemm_3x96_avx512_f16b, f16_to_f32_split_panel_avx512},
    {Isa::avx2, "f16_f32acc_gemm_4x24__avx2", DType::f16, PanelType::f32, PanelType::f32, 4, 24, 0,
     1, f16_f32acc_gemm_4x24_avx2, f16_to_f32_panel_avx2, nullptr, nullptr, nullptr,
     f16_f32acc_gemm_4x24_avx2_f16b, f16_to_f32_split_panel_avx2},
    {Isa::avx2, "f16_f32acc_gemm_6x16__avx2", DType::f16, PanelType::f32, PanelType::f32, 6, 16, 0,
     1, f16_f32acc_gemm_6x16_avx2, f16_to_f32_panel_avx2, nullptr, nullptr, nullptr,
     f16_f32acc_gemm_6x16_avx2_f16b, f16_to_f32_split_panel_avx2},
    {Isa::scalar, "f16_f32acc_gemm_4x16__scalar", DType::f16, PanelType::f32, PanelType::f32, 4, 16,
     0, 1, f16_f32acc_gemm_4x16_scalar, f16_to_f32_panel_scalar, nullptr, nullptr, nullptr,
     f16_f32acc_gemm_4x16_scalar_f16b, f16_to_f32_split_panel_scalar},
};

// Rows at an emulated ISA are their stand-ins; elsewhere the hardware's rows (`emulated`:
// avx512fp16_emulated(), asked once per lookup).
bool in_use(const GemmKernel& g, bool emulated) {
  return g.isa != Isa::avx512fp16 || g.emulated == emulated;
}

int64_t blocks(int64_t n, int64_t b) {
  return (n + b - 1) / b;
}

void put_panel(PanelType t, float v, uint8_t* dst) {
  switch (t) {
    case PanelType::f32: std::memcpy(dst, &v, 4); return;
    case PanelType::f16: {
      uint16_t h = float_to_half(v);
      std::memcpy(dst, &h, 2);
      return;
    }
    case PanelType::f16_pair: {
      uint16_t h = float_to_half(v);
      uint32_t pair = static_cast<uint32_t>(h) * 0x10001u;
      std::memcpy(dst, &pair, 4);
      return;
    }
    case PanelType::bf16_pair: {  // one member: `dst` is its half of the element
      uint16_t h = float_to_bf16(v);
      std::memcpy(dst, &h, 2);
      return;
    }
  }
}

}  // namespace

size_t panel_type_bytes(PanelType t) {
  return t == PanelType::f16 ? 2 : 4;
}

std::span<const GemmKernel> gemm_kernels() {
  return kKernels;
}

const GemmKernel* find_gemm_kernel(Isa max, DType storage, int64_t m, bool allow_bf16) {
  const GemmKernel* best = nullptr;
  double best_use = 0;
  const bool emulated = avx512fp16_emulated();
  for (const GemmKernel& g : kKernels) {
    if (g.storage != storage || g.isa > max || (bf16_dot(g) && !allow_bf16) || !in_use(g, emulated))
      continue;
    if (best && g.isa != best->isa) break;
    // Three-row tiles reuse each B vector three times, half what six rows do: they pay only
    // where the output channels are that few (heads to 2 or 3 classes).
    if (g.mr <= 3 && m > g.mr) continue;
    double use = m > 0 ? static_cast<double>(m) / static_cast<double>(blocks(m, g.mr) * g.mr) : 1;
    if (!best || use > best_use) {
      best = &g;
      best_use = use;
    }
  }
  return best;
}

std::vector<const GemmKernel*> gemm_siblings(const GemmKernel& g) {
  std::vector<const GemmKernel*> out = {&g};
  for (const GemmKernel& s : kKernels)
    if (&s != &g && s.isa == g.isa && s.storage == g.storage && s.a_panel == g.a_panel &&
        s.b_panel == g.b_panel && s.mr == g.mr && s.k_pack == g.k_pack && s.k_carry == g.k_carry &&
        s.to_panel == g.to_panel && s.emulated == g.emulated)
      out.push_back(&s);
  return out;
}

const GemmKernel* find_gemm_kernel(const char* name) {
  for (const GemmKernel& g : kKernels)
    if (std::strcmp(g.name, name) == 0) return &g;
  return nullptr;
}

size_t packed_a_bytes(const GemmKernel& g, int64_t m, int64_t k) {
  return static_cast<size_t>(blocks(m, g.mr) * g.mr * packed_steps(g, k)) *
         panel_type_bytes(g.a_panel);
}

size_t packed_b_bytes(const GemmKernel& g, int64_t k, int64_t n) {
  return static_cast<size_t>(blocks(n, g.nr) * g.nr * packed_steps(g, k)) *
         panel_type_bytes(g.b_panel);
}

std::vector<int64_t> panel_offsets(const GemmKernel& g, int64_t k) {
  std::vector<int64_t> off(static_cast<size_t>(packed_steps(g, k)));
  for (size_t t = 0; t < off.size(); ++t) off[t] = static_cast<int64_t>(t) * g.nr;
  return off;
}

void pack_a(const GemmKernel& g, const float* src, int64_t row_stride, int64_t step_stride,
            int64_t m, int64_t k, void* dst) {
  const size_t eb = panel_type_bytes(g.a_panel), member = eb / static_cast<size_t>(g.k_pack);
  const int64_t kp = g.k_pack, elems = packed_steps(g, k);
  uint8_t* d = static_cast<uint8_t*>(dst);
  for (int64_t i0 = 0; i0 < m; i0 += g.mr)
    for (int64_t t = 0; t < elems; ++t)
      for (int64_t i = i0; i < i0 + g.mr; ++i, d += eb)
        for (int64_t h = 0; h < kp; ++h) {
          const int64_t s = t * kp + h;
          put_panel(g.a_panel, i < m && s < k ? src[i * row_stride + s * step_stride] : 0.0f,
                    d + static_cast<size_t>(h) * member);
        }
}

void pack_b(const GemmKernel& g, const void* src, int64_t ld, int64_t k, int64_t n, void* dst) {
  const size_t sb = dtype_size(g.storage), eb = panel_type_bytes(g.b_panel);
  const size_t member = eb / static_cast<size_t>(g.k_pack);
  const int64_t panel = packed_steps(g, k) * g.nr;
  const uint8_t* s = static_cast<const uint8_t*>(src);
  uint8_t* d = static_cast<uint8_t*>(dst);
  if (g.to_panel_pair) {
    // Both members of each element at once (k_pack 2); a last odd step pairs with zeros.
    for (int64_t r = 0; r < k; r += 2)
      for (int64_t j0 = 0; j0 < n; j0 += g.nr) {
        const int64_t cols = std::min<int64_t>(g.nr, n - j0);
        uint8_t* out = d + ((j0 / g.nr) * panel + r / 2 * g.nr) * eb;
        g.to_panel_pair(s + (r * ld + j0) * sb, r + 1 < k ? s + ((r + 1) * ld + j0) * sb : nullptr,
                        out, static_cast<size_t>(cols));
        std::memset(out + cols * eb, 0, (g.nr - cols) * eb);
      }
    return;
  }
  // Members are written one step at a time: zero the columns and steps no step fills first.
  if (g.k_pack > 1) std::memset(d, 0, packed_b_bytes(g, k, n));
  // Row by row, so the source is read in long sequential runs.
  for (int64_t r = 0; r < k; ++r)
    for (int64_t j0 = 0; j0 < n; j0 += g.nr) {
      int64_t cols = std::min<int64_t>(g.nr, n - j0);
      uint8_t* out = d + ((j0 / g.nr) * panel + r / g.k_pack * g.nr) * eb +
                     static_cast<size_t>(r % g.k_pack) * member;
      g.to_panel(s + (r * ld + j0) * sb, out, static_cast<size_t>(cols));
      if (g.k_pack == 1) std::memset(out + cols * eb, 0, (g.nr - cols) * eb);
    }
}

}  // namespace voxrt::cpu
