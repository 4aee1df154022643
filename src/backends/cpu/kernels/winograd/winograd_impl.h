// The Winograd transforms written once over a vector type S (vec/*.h) and a storage type T (float
// or Half). Included by the per-ISA sources, which instantiate it.
#pragma once

#include <algorithm>
#include <cassert>
#include <type_traits>

#include "backends/cpu/kernels/vec/vec_math.h"
#include "backends/cpu/kernels/winograd/winograd.h"

namespace voxrt::cpu {
namespace {

template <class S, class T>
struct WinogradImpl {
  using V = typename S::V;
  static constexpr int W = S::kWidth;

  // B^T along one axis, in place on four values.
  static void bt(V& d0, V& d1, V& d2, V& d3) {
    const V t0 = S::sub(d0, d2), t1 = S::add(d1, d2), t2 = S::sub(d2, d1), t3 = S::sub(d1, d3);
    d0 = t0;
    d1 = t1;
    d2 = t2;
    d3 = t3;
  }

  // Values x[k, k + W), zero outside [0, w): a masked load where the window reaches past the end,
  // lanes shifted in from the left where it starts before 0 (the convolution's start pad).
  template <class P>
  static V window(const P* x, int64_t k, int64_t w) {
    if (k >= w || k + W <= 0) return S::zero();
    if (k >= 0)
      return k + W <= w ? S::load(x + k) : S::load_partial(x + k, static_cast<int>(w - k));
    V v = S::load_partial(x, static_cast<int>(std::min<int64_t>(W + k, w)));
    for (int64_t s = k; s < 0; ++s) v = S::shift_up(v, S::zero());
    return v;
  }

  static void input_rows(const void* const* rows, int64_t nrows, int64_t x0, int64_t w, int64_t len,
                         float* out, int64_t stride) {
    assert(len <= kWinogradMaxLen);
    for (int64_t r = 0; r < nrows; ++r) {
      float* o = out + r * 4 * stride;
      const T* x = static_cast<const T*>(rows[r]);
      for (int64_t j = 0; j < len; j += W) {
        V d0 = S::zero(), d1 = S::zero(), d2 = S::zero(), d3 = S::zero();
        if (x) {
          const int64_t k = x0 + 2 * j;
          if (k >= 0 && k + 2 * W + 2 <= w) {  // inside the row
            S::deinterleave(S::load(x + k), S::load(x + k + W), d0, d1);
            S::deinterleave(S::load(x + k + 2), S::load(x + k + 2 + W), d2, d3);
          } else {
            S::deinterleave(window(x, k, w), window(x, k + W, w), d0, d1);
            S::deinterleave(window(x, k + 2, w), window(x, k + 2 + W, w), d2, d3);
          }
          bt(d0, d1, d2, d3);
        }
        S::store(o + j, d0);
        S::store(o + stride + j, d1);
        S::store(o + 2 * stride + j, d2);
        S::store(o + 3 * stride + j, d3);
      }
    }
  }

  // The height and depth transforms with the depth a constant, so that the 16 (4) vectors of each
  // width position stay in registers.
  template <bool Depth>
  static void finish(const float* in, int64_t stride, int64_t lanes, float* v, int64_t v_stride) {
    constexpr int da = Depth ? 4 : 1;
    for (int64_t j = 0; j < lanes; j += W) {
      const int c = static_cast<int>(std::min<int64_t>(W, lanes - j));
      for (int u = 0; u < 4; ++u) {
        V d[da][4];  // [a][b]
        for (int a = 0; a < da; ++a) {
          for (int b = 0; b < 4; ++b) d[a][b] = S::load(in + ((a * 4 + b) * 4 + u) * stride + j);
          bt(d[a][0], d[a][1], d[a][2], d[a][3]);
        }
        if constexpr (Depth)
          for (int q = 0; q < 4; ++q) bt(d[0][q], d[1][q], d[2][q], d[3][q]);
        for (int p = 0; p < da; ++p)
          for (int q = 0; q < 4; ++q) {
            float* dst = v + ((p * 4 + q) * 4 + u) * v_stride + j;
            if (c == W)
              S::store(dst, d[p][q]);
            else
              S::store_partial(dst, d[p][q], c);
          }
      }
    }
  }

  static void input_finish(const float* in, int64_t stride, bool depth, int64_t lanes, float* v,
                           int64_t v_stride) {
    if (depth)
      finish<true>(in, stride, lanes, v, v_stride);
    else
      finish<false>(in, stride, lanes, v, v_stride);
  }

  template <bool Depth>
  static void gather(const float* m, int64_t m_stride, int64_t lanes, float* o, int64_t stride) {
    constexpr int dp = Depth ? 4 : 1;
    for (int64_t j = 0; j < lanes; j += W) {
      for (int u = 0; u < 4; ++u) {
        V s[dp][2];  // [p][dy]: A^T along the height
        for (int p = 0; p < dp; ++p) {
          V x[4];
          for (int q = 0; q < 4; ++q) x[q] = S::load(m + ((p * 4 + q) * 4 + u) * m_stride + j);
          s[p][0] = S::add(S::add(x[0], x[1]), x[2]);
          s[p][1] = S::sub(S::sub(x[1], x[2]), x[3]);
        }
        for (int dy = 0; dy < 2; ++dy) {
          if constexpr (Depth) {
            S::store(o + (dy * 4 + u) * stride + j, S::add(S::add(s[0][dy], s[1][dy]), s[2][dy]));
            S::store(o + ((2 + dy) * 4 + u) * stride + j,
                     S::sub(S::sub(s[1][dy], s[2][dy]), s[3][dy]));
          } else {
            S::store(o + (dy * 4 + u) * stride + j, s[0][dy]);
          }
        }
      }
    }
  }

  static void output_gather(const float* m, int64_t m_stride, bool depth, int64_t lanes, float* o,
                            int64_t stride) {
    if (depth)
      gather<true>(m, m_stride, lanes, o, stride);
    else
      gather<false>(m, m_stride, lanes, o, stride);
  }

  // Values [at, at + W) of an output row of `cols`, those before cols: + bias b, the residual r
  // (null: none), the activation (the residual after it where `after`), stored at y.
  template <Act A>
  static void put_values(V v, int64_t at, int64_t cols, V b, const T* r, const ActVec<S>& pv,
                         bool after, T* y) {
    const int count = static_cast<int>(std::min<int64_t>(W, cols - at));
    if (count <= 0) return;
    auto res = [&] { return count == W ? S::load(r + at) : S::load_partial(r + at, count); };
    v = S::add(v, b);
    if (r && !after) v = S::add(v, res());
    v = activate<S, A>(v, pv);
    if (r && after) v = S::add(v, res());
    if (count == W)
      S::store(y + at, v);
    else
      S::store_partial(y + at, v, count);
  }

  template <Act A>
  static void finish_row(const float* o, int64_t stride, int64_t len, int64_t cols, float bias,
                         const T* r, const ActVec<S>& pv, bool after, T* y) {
    const V b = S::set1(bias);
    auto put = [&](V v, int64_t at) { put_values<A>(v, at, cols, b, r, pv, after, y); };
    for (int64_t j = 0; j < len; j += W) {
      const V u0 = S::load(o + j), u1 = S::load(o + stride + j), u2 = S::load(o + 2 * stride + j),
              u3 = S::load(o + 3 * stride + j);
      V lo, hi;
      S::interleave(S::add(S::add(u0, u1), u2), S::sub(S::sub(u1, u2), u3), lo, hi);
      put(lo, 2 * j);
      put(hi, 2 * j + W);
    }
  }

  static void output_row(const float* o, int64_t stride, int64_t len, int64_t cols, float bias,
                         const void* residual, const ActParams& act, bool residual_after_act,
                         void* y) {
    const T* r = static_cast<const T*>(residual);
    const ActVec<S> pv(act);
    with_act(act.act, [&]<Act A>() {
      finish_row<A>(o, stride, len, cols, bias, r, pv, residual_after_act, static_cast<T*>(y));
    });
  }

  // F(4, 3), 2D (winograd.h, WinogradF43Kernels).

  // B^T along one axis, in place on six values.
  static void bt6(V (&d)[6]) {
    const V m4 = S::set1(-4.0f), m5 = S::set1(-5.0f), four = S::set1(4.0f);
    const V t0 = S::fmadd(m4, d[2], d[4]), t1 = S::fmadd(m4, d[1], d[3]);
    const V t2 = S::sub(d[4], d[2]), t3 = S::sub(d[3], d[1]);
    const V v0 = S::fmadd(four, d[0], S::fmadd(m5, d[2], d[4]));
    const V v5 = S::fmadd(four, d[1], S::fmadd(m5, d[3], d[5]));
    d[0] = v0;
    d[1] = S::add(t0, t1);
    d[2] = S::sub(t0, t1);
    d[3] = S::add(t2, S::add(t3, t3));
    d[4] = S::sub(t2, S::add(t3, t3));
    d[5] = v5;
  }

  // A^T along one axis, its columns divided by the factors G's rows are multiplied by (4, 6, 6,
  // 24, 24, 1; winograd.h): six values to four.
  static void at6(const V (&m)[6], V (&y)[4]) {
    const V a = S::add(m[1], m[2]), b = S::sub(m[1], m[2]), c = S::add(m[3], m[4]),
            d = S::sub(m[3], m[4]);
    const V sixth = S::set1(1.0f / 6);
    y[0] = S::fmadd(S::set1(0.25f), m[0], S::fmadd(sixth, a, S::mul(S::set1(1.0f / 24), c)));
    y[1] = S::fmadd(sixth, b, S::mul(S::set1(1.0f / 12), d));
    y[2] = S::mul(sixth, S::add(a, c));
    y[3] = S::fmadd(sixth, b, S::fmadd(S::set1(1.0f / 3), d, m[5]));
  }

  // x[i], zero outside [0, w).
  static float value(const T* x, int64_t i, int64_t w) {
    return i >= 0 && i < w ? S::load1(x + i) : 0.0f;
  }

  static void input_rows4(const void* const* rows, int64_t nrows, int64_t x0, int64_t w,
                          int64_t len, float* out, int64_t stride) {
    assert(len <= kWinogradMaxLen);
    for (int64_t r = 0; r < nrows; ++r) {
      float* o = out + r * 6 * stride;
      const T* x = static_cast<const T*>(rows[r]);
      for (int64_t j = 0; j < len; j += W) {
        V d[6] = {S::zero(), S::zero(), S::zero(), S::zero(), S::zero(), S::zero()};
        if (x) {
          // The W tiles' values u < 4 are 4W consecutive values, split four ways; u = 4, 5 are
          // the next tile's 0 and 1, one lane on.
          const int64_t k = x0 + 4 * j;
          V a, b, c, e;
          float n0, n1;
          if (k >= 0 && k + 4 * W + 2 <= w) {  // inside the row
            a = S::load(x + k);
            b = S::load(x + k + W);
            c = S::load(x + k + 2 * W);
            e = S::load(x + k + 3 * W);
            n0 = S::load1(x + k + 4 * W);
            n1 = S::load1(x + k + 4 * W + 1);
          } else {
            a = window(x, k, w);
            b = window(x, k + W, w);
            c = window(x, k + 2 * W, w);
            e = window(x, k + 3 * W, w);
            n0 = value(x, k + 4 * W, w);
            n1 = value(x, k + 4 * W + 1, w);
          }
          V e0, o0, e1, o1;
          S::deinterleave(a, b, e0, o0);
          S::deinterleave(c, e, e1, o1);
          S::deinterleave(e0, e1, d[0], d[2]);
          S::deinterleave(o0, o1, d[1], d[3]);
          d[4] = S::shift_down(d[0], S::set1(n0));
          d[5] = S::shift_down(d[1], S::set1(n1));
          bt6(d);
        }
        for (int u = 0; u < 6; ++u) S::store(o + u * stride + j, d[u]);
      }
    }
  }

  // The height and depth transforms of F(4, 3), the depth a constant as in finish.
  template <bool Depth>
  static void finish4(const float* in, int64_t stride, int64_t lanes, float* v, int64_t v_stride) {
    constexpr int da = Depth ? 6 : 1;
    for (int64_t j = 0; j < lanes; j += W) {
      const int c = static_cast<int>(std::min<int64_t>(W, lanes - j));
      for (int u = 0; u < 6; ++u) {
        V d[da][6];  // [a][b]
        for (int a = 0; a < da; ++a) {
          for (int b = 0; b < 6; ++b) d[a][b] = S::load(in + ((a * 6 + b) * 6 + u) * stride + j);
          bt6(d[a]);
        }
        for (int q = 0; q < 6; ++q) {
          V col[6];
          for (int a = 0; a < 6; ++a) col[a] = d[Depth ? a : 0][q];
          if constexpr (Depth) bt6(col);
          for (int p = 0; p < da; ++p) {
            float* dst = v + ((p * 6 + q) * 6 + u) * v_stride + j;
            if (c == W)
              S::store(dst, col[p]);
            else
              S::store_partial(dst, col[p], c);
          }
        }
      }
    }
  }

  static void input_finish4(const float* in, int64_t stride, bool depth, int64_t lanes, float* v,
                            int64_t v_stride) {
    if (depth)
      finish4<true>(in, stride, lanes, v, v_stride);
    else
      finish4<false>(in, stride, lanes, v, v_stride);
  }

  template <bool Depth>
  static void gather4(const float* m, int64_t m_stride, int64_t lanes, float* o, int64_t stride) {
    constexpr int dp = Depth ? 6 : 1;
    for (int64_t j = 0; j < lanes; j += W)
      for (int u = 0; u < 6; ++u) {
        V s[dp][4];  // [p][dy]: A^T along the height
        for (int p = 0; p < dp; ++p) {
          V x[6];
          for (int q = 0; q < 6; ++q) x[q] = S::load(m + ((p * 6 + q) * 6 + u) * m_stride + j);
          at6(x, s[p]);
        }
        for (int dy = 0; dy < 4; ++dy) {
          if constexpr (Depth) {
            V col[6], z[4];
            for (int p = 0; p < 6; ++p) col[p] = s[p][dy];
            at6(col, z);
            for (int dz = 0; dz < 4; ++dz)
              S::store(o + ((dz * 4 + dy) * 6 + u) * stride + j, z[dz]);
          } else {
            S::store(o + (dy * 6 + u) * stride + j, s[0][dy]);
          }
        }
      }
  }

  static void output_gather4(const float* m, int64_t m_stride, bool depth, int64_t lanes, float* o,
                             int64_t stride) {
    if (depth)
      gather4<true>(m, m_stride, lanes, o, stride);
    else
      gather4<false>(m, m_stride, lanes, o, stride);
  }

  template <Act A>
  static void finish_row4(const float* o, int64_t stride, int64_t len, int64_t cols, float bias,
                          const T* r, const ActVec<S>& pv, bool after, T* y) {
    const V b = S::set1(bias);
    auto put = [&](V v, int64_t at) { put_values<A>(v, at, cols, b, r, pv, after, y); };
    for (int64_t j = 0; j < len; j += W) {
      V x[6], t[4];
      for (int u = 0; u < 6; ++u) x[u] = S::load(o + u * stride + j);
      at6(x, t);
      // The four outputs of each tile next to each other: two rounds of interleaving.
      V p_lo, p_hi, q_lo, q_hi, y0, y1, y2, y3;
      S::interleave(t[0], t[2], p_lo, p_hi);
      S::interleave(t[1], t[3], q_lo, q_hi);
      S::interleave(p_lo, q_lo, y0, y1);
      S::interleave(p_hi, q_hi, y2, y3);
      put(y0, 4 * j);
      put(y1, 4 * j + W);
      put(y2, 4 * j + 2 * W);
      put(y3, 4 * j + 3 * W);
    }
  }

  static void output_row4(const float* o, int64_t stride, int64_t len, int64_t cols, float bias,
                          const void* residual, const ActParams& act, bool residual_after_act,
                          void* y) {
    const T* r = static_cast<const T*>(residual);
    const ActVec<S> pv(act);
    with_act(act.act, [&]<Act A>() {
      finish_row4<A>(o, stride, len, cols, bias, r, pv, residual_after_act, static_cast<T*>(y));
    });
  }

  // F(4, 3)'s kernels for fp16 storage only (ConvWinograd::f43); fp32's table leaves them null.
  static constexpr WinogradKernels table(const char* name, const char* f43_name = nullptr) {
    WinogradKernels k{name, input_rows, input_finish, output_gather, output_row, {}};
    if constexpr (std::is_same_v<T, Half>)
      k.f43 = {f43_name, input_rows4, input_finish4, output_gather4, output_row4};
    return k;
  }
};

}  // namespace
}  // namespace voxrt::cpu
