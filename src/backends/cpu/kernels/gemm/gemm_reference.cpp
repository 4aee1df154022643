// The family's reference: any row's tile from the same panels (both members of bf16 pairs),
// summed in double, or for rows with fp16 arithmetic, each step a correctly rounded fp16 fused
// multiply-add with the row's carry into fp32, as the hardware kernel does it.
#include <cstring>

#include "backends/cpu/kernels/gemm/gemm.h"
#include "core/half.h"

namespace voxrt::cpu {

namespace {

// Member `member` of panel element `index` (only bf16_pair elements have a second member).
double panel_value(PanelType t, const void* base, size_t index, size_t member = 0) {
  const uint8_t* p = static_cast<const uint8_t*>(base) + index * panel_type_bytes(t);
  switch (t) {
    case PanelType::f32: {
      float v;
      std::memcpy(&v, p, 4);
      return v;
    }
    case PanelType::f16:
    case PanelType::f16_pair: {
      uint16_t h;
      std::memcpy(&h, p, 2);
      return half_to_float(h);
    }
    case PanelType::bf16_pair: {
      uint16_t h;
      std::memcpy(&h, p + 2 * member, 2);
      return bf16_to_float(h);
    }
  }
  return 0;
}

double load_storage(DType t, const void* base, size_t index) {
  if (t == DType::f16) return half_to_float(static_cast<const uint16_t*>(base)[index]);
  return static_cast<const float*>(base)[index];
}

void store_storage(DType t, void* base, size_t index, double v) {
  if (t == DType::f16)
    static_cast<uint16_t*>(base)[index] = float_to_half(static_cast<float>(v));
  else
    static_cast<float*>(base)[index] = static_cast<float>(v);
}

double fp16_round(double v) {
  return half_to_float(float_to_half(static_cast<float>(v)));
}

}  // namespace

void gemm_reference(const GemmKernel& g, size_t mr, size_t nc, size_t k, const void* a,
                    const void* b, const int64_t* b_offsets, void* c, size_t ldc,
                    const GemmParams& p, bool f16_b) {
  const PanelType b_type = f16_b ? PanelType::f16 : g.b_panel;
  auto b_at = [&](size_t s, size_t j, size_t member = 0) {
    return panel_value(b_type, b, static_cast<size_t>(b_offsets[s]) + j, member);
  };
  for (size_t i = 0; i < mr; ++i)
    for (size_t j = 0; j < nc; ++j) {
      double acc = 0;
      if (g.k_carry == 0) {
        for (size_t s = 0; s < k; ++s)
          for (size_t h = 0; h < static_cast<size_t>(g.k_pack); ++h)
            acc += panel_value(g.a_panel, a, s * g.mr + i, h) * b_at(s, j, h);
      } else {
        float carry = 0;
        for (size_t s0 = 0; s0 < k; s0 += static_cast<size_t>(g.k_carry)) {
          double h = 0;
          for (size_t s = s0; s < k && s < s0 + static_cast<size_t>(g.k_carry); ++s)
            h = fp16_round(h + panel_value(g.a_panel, a, s * g.mr + i) * b_at(s, j));
          carry += static_cast<float>(h);
        }
        acc = carry;
      }
      size_t at = i * ldc + j;
      if (p.bias) acc += p.bias[i];
      const double r = p.residual ? load_storage(g.storage, p.residual, at) : 0.0;
      if (!p.residual_after_act) acc += r;
      if (p.act == Activation::relu) acc = acc > 0 ? acc : 0;
      if (p.act == Activation::leaky_relu)
        acc = acc >= 0 ? acc : (p.slopes ? p.slopes[i] : p.alpha) * acc;
      if (p.residual_after_act) acc += r;
      store_storage(p.f32_out ? DType::f32 : g.storage, c, at, acc);
    }
}

}  // namespace voxrt::cpu
