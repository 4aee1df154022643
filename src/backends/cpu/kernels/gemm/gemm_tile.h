// The body of the fp32-arithmetic gemm microkernels, written once over a vector traits type V
// (scalar, AVX2, AVX-512). Each ISA source includes it with its own traits and compile flags, so
// every instantiation depends on V: no inline code is shared between ISA translation units.
//
// V provides: type Vec, lanes W, zero(), set1(float), load(const float*), load(const uint16_t*),
// store(float*, Vec), store(uint16_t*, Vec), fmadd(a, b, c) = a * b + c, add, relu, leaky(v,
// alpha), store_even_odd(a, b, e, o) (the even and odd values of a then b, in order). uint16_t is
// the fp16 storage type. Optional: load_first(p, n) and store_even_odd(a, b, e, o, n) (masked: the
// first n values), for split_panel's tail.
#pragma once

#include <algorithm>
#include <cstring>
#include <type_traits>

#include "backends/cpu/kernels/gemm/gemm.h"

namespace voxrt::cpu::gemm_detail {

template <class V, class Out, class Res, int MR, int NV>
inline void finish_tile(const typename V::Vec (&acc)[MR][NV], size_t mr, size_t nc, Out* c,
                        size_t ldc, const float* bias, const Res* residual, Activation act,
                        float alpha, const float* slopes, bool residual_after_act) {
  using Vec = typename V::Vec;
  constexpr int NR = NV * V::W;
  const bool full = nc == NR;
  Out tmp_out[NR];
  Res tmp_res[NR];
  const Vec slope = V::set1(alpha);
#pragma GCC unroll 16
  for (int i = 0; i < MR; ++i) {
    if (static_cast<size_t>(i) >= mr) break;
    Out* row = c + i * ldc;
    const Res* res = residual ? residual + i * ldc : nullptr;
    if (res && !full) {
      std::memset(tmp_res, 0, sizeof(tmp_res));
      std::memcpy(tmp_res, res, nc * sizeof(Res));
      res = tmp_res;
    }
    Out* dst = full ? row : tmp_out;
    const Vec b = bias ? V::set1(bias[i]) : V::zero();
    const Vec row_slope = slopes ? V::set1(slopes[i]) : slope;
#pragma GCC unroll 8
    for (int j = 0; j < NV; ++j) {
      Vec v = V::add(acc[i][j], b);
      if (res && !residual_after_act) v = V::add(v, V::load(res + j * V::W));
      if (act == Activation::relu)
        v = V::relu(v);
      else if (act == Activation::leaky_relu)
        v = V::leaky(v, row_slope);
      if (res && residual_after_act) v = V::add(v, V::load(res + j * V::W));
      V::store(dst + j * V::W, v);
    }
    if (!full) std::memcpy(row, tmp_out, nc * sizeof(Out));
  }
}

/// Stores fp32 sums of a tile through the epilogue as GemmParams asks: as Out (the storage
/// dtype), or as fp32 (f32_out); the residual is always Out.
template <class V, class Out, int MR, int NV>
inline void finish(const typename V::Vec (&acc)[MR][NV], size_t mr, size_t nc, void* c, size_t ldc,
                   const GemmParams& p) {
  if (p.f32_out && !std::is_same_v<Out, float>) {
    finish_tile<V, float, Out, MR, NV>(acc, mr, nc, static_cast<float*>(c), ldc, p.bias,
                                       static_cast<const Out*>(p.residual), p.act, p.alpha,
                                       p.slopes, p.residual_after_act);
    return;
  }
  finish_tile<V, Out, Out, MR, NV>(acc, mr, nc, static_cast<Out*>(c), ldc, p.bias,
                                   static_cast<const Out*>(p.residual), p.act, p.alpha, p.slopes,
                                   p.residual_after_act);
}

/// Asks for the residual rows a tile's epilogue will read (R rows of NR values of Out, C's row
/// stride) before its k loop, so that they arrive while it runs: read only after the loop, with
/// a tile's rows a plane apart, they came from memory on the critical path (a MONAI residual
/// unit's 1->16 conv at 48^3: 1.3 ms alone, 1.8 ms after the 16->16 conv that wrote its
/// residual).
template <class V, int R, int NR, class Out>
inline void prefetch_residual(const GemmParams& p, size_t ldc) {
  if (!p.residual) return;
  const char* r = static_cast<const char*>(p.residual);
#pragma GCC unroll 16
  for (int i = 0; i < R; ++i)
    for (size_t b = 0; b < NR * sizeof(Out) + 63; b += 64)
      __builtin_prefetch(r + i * ldc * sizeof(Out) + b);
}

/// Calls f(std::integral_constant<int, R>) with R = min(mr, MR): a tile short of rows (a head to
/// one or two classes on a three-row kernel, the last block of output channels) multiplies only
/// the rows it stores.
template <int MR, int R = 1, class F>
inline void with_rows(size_t mr, F&& f) {
  if constexpr (R < MR) {
    if (mr <= static_cast<size_t>(R)) {
      f(std::integral_constant<int, R>{});
      return;
    }
    with_rows<MR, R + 1>(mr, f);
  } else {
    f(std::integral_constant<int, MR>{});
  }
}

/// The B rows a step reads lie at offsets the hardware prefetchers do not follow (taps of
/// several input rows, planes and, with strides, phase planes), so AVX-512 tiles ask for the
/// rows of the step kPrefetchSteps ahead: the lines an unaligned row of NR values of B can span.
/// conv_bench, f32 and f16 storage on AVX-512, one thread, alternated with the tile without it
/// (Intel Xeon with AVX-512): stride-2 3x3x3 convolutions 48-96 -> 66-113 GFLOP/s (+15 to +40%),
/// unit-stride ones -3 to +8% (12 -> 12 at 48^3 the one below), ConvTranspose unchanged. Short k
/// (few input channels: heads, first layers, 6 -> 6) lost 3-8% (rows that fit L1, presumably),
/// so tiles of fewer than
/// kPrefetchMinSteps steps go without; so do AVX2 tiles (two or three lines a step against
/// half the FMAs: -5 to +5%).
constexpr size_t kPrefetchSteps = 12;
constexpr size_t kPrefetchMinSteps = 200;
template <int Bytes>
inline void prefetch_b_row(const void* row) {
  const char* p = static_cast<const char*>(row);
#pragma GCC unroll 8
  for (int line = 0; line <= (Bytes + 63) / 64; ++line) __builtin_prefetch(p + line * 64, 0, 3);
}

/// C tile = A micro-panel (fp32, MR per step) x B rows (NR = NV * W values of B per step, at
/// b_base + b_offsets[step]: fp32, or fp16 bits widened as they load), then the epilogue, stored
/// as Out (float or fp16 bits). Rows past mr are neither computed nor stored.
template <class V, class Out, int MR, int NV, class B = float>
inline void gemm_tile(size_t mr, size_t nc, size_t k, const void* a_panel, const void* b_base,
                      const int64_t* b_offsets, void* c, size_t ldc, const GemmParams& p) {
  using Vec = typename V::Vec;
  with_rows<MR>(mr, [&](auto rows) {
    constexpr int R = decltype(rows)::value;
    prefetch_residual<V, R, NV * V::W, Out>(p, ldc);
    const float* a = static_cast<const float*>(a_panel);
    const B* b_rows = static_cast<const B*>(b_base);
    Vec acc[R][NV];
#pragma GCC unroll 16
    for (int i = 0; i < R; ++i)
#pragma GCC unroll 8
      for (int j = 0; j < NV; ++j) acc[i][j] = V::zero();
    auto step = [&](size_t s) __attribute__((always_inline)) {
      const B* b = b_rows + b_offsets[s];
      Vec bv[NV];
#pragma GCC unroll 8
      for (int j = 0; j < NV; ++j) bv[j] = V::load(b + j * V::W);
#pragma GCC unroll 16
      for (int i = 0; i < R; ++i) {
        const Vec av = V::set1(a[i]);
#pragma GCC unroll 8
        for (int j = 0; j < NV; ++j) acc[i][j] = V::fmadd(av, bv[j], acc[i][j]);
      }
      a += MR;
    };
    size_t s = 0;
    if (V::W == 16 && k >= kPrefetchMinSteps)
      for (; s + kPrefetchSteps < k; ++s) {
        prefetch_b_row<NV * V::W * sizeof(B)>(b_rows + b_offsets[s + kPrefetchSteps]);
        step(s);
      }
    for (; s < k; ++s) step(s);
    finish<V, Out, R, NV>(acc, mr, nc, c, ldc, p);
  });
}

/// PanelConvertSplit for rows of fp32 panels: even[j] = src[2j], odd[j] = src[2j + 1], j < n, from
/// fp32 or fp16 (From) values, 2W values a step; the tail through masked loads and stores where V
/// has them (a stride-2 layer's rows of 48 split 16 + 8: the tail's copies took a third of the
/// copying time of 8->16 from 48^3, `perf` on conv_bench), else through a zero-padded copy.
template <class V, class From>
inline void split_panel(const void* src, void* even, void* odd, size_t n) {
  constexpr size_t W = V::W;
  const From* s = static_cast<const From*>(src);
  float *e = static_cast<float*>(even), *o = static_cast<float*>(odd);
  size_t j = 0;
  for (; j + W <= n; j += W)
    V::store_even_odd(V::load(s + 2 * j), V::load(s + 2 * j + W), e + j, o + j);
  if constexpr (requires { V::load_first(s, n); }) {
    if (j < n) {
      const size_t values = 2 * (n - j);
      V::store_even_odd(V::load_first(s + 2 * j, std::min(values, W)),
                        values > W ? V::load_first(s + 2 * j + W, values - W) : V::zero(), e + j,
                        o + j, n - j);
    }
  } else if (j < n) {
    From in[2 * W] = {};
    float te[W], to[W];
    std::memcpy(in, s + 2 * j, 2 * (n - j) * sizeof(From));
    V::store_even_odd(V::load(in), V::load(in + W), te, to);
    std::memcpy(e + j, te, (n - j) * sizeof(float));
    std::memcpy(o + j, to, (n - j) * sizeof(float));
  }
}

}  // namespace voxrt::cpu::gemm_detail
