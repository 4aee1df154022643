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

  // A^T along one axis: four values to two.
  static void at4(const V (&m)[4], V (&y)[2]) {
    y[0] = S::add(S::add(m[0], m[1]), m[2]);
    y[1] = S::sub(S::sub(m[1], m[2]), m[3]);
  }

  // B^T and A^T of the N-point form (F(2, 3): 4, F(4, 3): 6; defined below).
  template <int N>
  static void bt_n(V (&d)[N]) {
    if constexpr (N == 4)
      bt(d[0], d[1], d[2], d[3]);
    else
      bt6(d);
  }
  template <int N>
  static void at_n(const V (&m)[N], V (&y)[N - 2]) {
    if constexpr (N == 4)
      at4(m, y);
    else
      at6(m, y);
  }

  // The height and depth transforms of the N-point form with the depth a constant, so that the
  // N * N (N) vectors of each width position stay in registers.
  template <int N, bool Depth>
  static void finish(const float* in, int64_t stride, int64_t lanes, float* v, int64_t v_stride) {
    constexpr int da = Depth ? N : 1;
    for (int64_t j = 0; j < lanes; j += W) {
      const int c = static_cast<int>(std::min<int64_t>(W, lanes - j));
      for (int u = 0; u < N; ++u) {
        V d[da][N];  // [a][b]
        for (int a = 0; a < da; ++a) {
          for (int b = 0; b < N; ++b) d[a][b] = S::load(in + ((a * N + b) * N + u) * stride + j);
          bt_n<N>(d[a]);
        }
        for (int q = 0; q < N; ++q) {
          V col[N];
          for (int a = 0; a < N; ++a) col[a] = d[Depth ? a : 0][q];
          if constexpr (Depth) bt_n<N>(col);
          for (int p = 0; p < da; ++p) {
            float* dst = v + ((p * N + q) * N + u) * v_stride + j;
            if (c == W)
              S::store(dst, col[p]);
            else
              S::store_partial(dst, col[p], c);
          }
        }
      }
    }
  }

  template <int N>
  static void input_finish(const float* in, int64_t stride, bool depth, int64_t lanes, float* v,
                           int64_t v_stride) {
    if (depth)
      finish<N, true>(in, stride, lanes, v, v_stride);
    else
      finish<N, false>(in, stride, lanes, v, v_stride);
  }

  template <int N, bool Depth>
  static void gather(const float* m, int64_t m_stride, int64_t lanes, float* o, int64_t stride) {
    constexpr int dp = Depth ? N : 1, te = N - 2;  // outputs a tile along an axis
    for (int64_t j = 0; j < lanes; j += W)
      for (int u = 0; u < N; ++u) {
        V s[dp][te];  // [p][dy]: A^T along the height
        for (int p = 0; p < dp; ++p) {
          V x[N];
          for (int q = 0; q < N; ++q) x[q] = S::load(m + ((p * N + q) * N + u) * m_stride + j);
          at_n<N>(x, s[p]);
        }
        for (int dy = 0; dy < te; ++dy) {
          if constexpr (Depth) {
            V col[N], z[te];
            for (int p = 0; p < N; ++p) col[p] = s[p][dy];
            at_n<N>(col, z);
            for (int dz = 0; dz < te; ++dz)
              S::store(o + ((dz * te + dy) * N + u) * stride + j, z[dz]);
          } else {
            S::store(o + (dy * N + u) * stride + j, s[0][dy]);
          }
        }
      }
  }

  template <int N>
  static void output_gather(const float* m, int64_t m_stride, bool depth, int64_t lanes, float* o,
                            int64_t stride) {
    if (depth)
      gather<N, true>(m, m_stride, lanes, o, stride);
    else
      gather<N, false>(m, m_stride, lanes, o, stride);
  }

  // The inverse width transform of an output row of the N-point form, its values put into Y (of
  // the storage type, or fp32: Out).
  template <int N, Act A, class Out>
  static void finish_row(const float* o, int64_t stride, int64_t len, int64_t cols, float bias,
                         const T* r, const ActVec<S>& pv, bool after, Out* y) {
    const V b = S::set1(bias);
    // Values [at, at + count) of the row: + bias, residual, activation, stored.
    auto put = [&](V v, int64_t at) {
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
    };
    for (int64_t j = 0; j < len; j += W) {
      V x[N], t[N - 2];
      for (int u = 0; u < N; ++u) x[u] = S::load(o + u * stride + j);
      at_n<N>(x, t);
      if constexpr (N == 4) {
        V lo, hi;
        S::interleave(t[0], t[1], lo, hi);
        put(lo, 2 * j);
        put(hi, 2 * j + W);
      } else {
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
  }

  // F(4, 3) (winograd.h, WinogradKernels::f43).

  // B^T along one axis, in place on six values.
  static void bt6(V (&d)[6]) {
    const V m4 = S::set1(-4.0f), m5 = S::set1(-5.0f), four = S::set1(4.0f);
    const V t0 = S::fmadd(m4, d[2], d[4]), t1 = S::fmadd(m4, d[1], d[3]);
    const V h = S::sub(d[3], d[1]);
    const V t2 = S::sub(d[4], d[2]), t3 = S::add(h, h);
    const V v0 = S::fmadd(four, d[0], S::fmadd(m5, d[2], d[4]));
    const V v5 = S::fmadd(four, d[1], S::fmadd(m5, d[3], d[5]));
    d[0] = v0;
    d[1] = S::add(t0, t1);
    d[2] = S::sub(t0, t1);
    d[3] = S::add(t2, t3);
    d[4] = S::sub(t2, t3);
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

  static void input_rows_f43(const void* const* rows, int64_t nrows, int64_t x0, int64_t w,
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

  // The output rows of the N-point form, stored as Out (T, or float: output_row_f32).
  template <int N, class Out = T>
  static void output_row(const float* o, int64_t stride, int64_t len, int64_t cols, float bias,
                         const void* residual, const ActParams& act, bool residual_after_act,
                         void* y) {
    const T* r = static_cast<const T*>(residual);
    const ActVec<S> pv(act);
    with_act(act.act, [&]<Act A>() {
      finish_row<N, A>(o, stride, len, cols, bias, r, pv, residual_after_act, static_cast<Out*>(y));
    });
  }

  // F(4, 3)'s kernels for fp16 storage only (ConvWinograd::f43); fp32's table leaves them null.
  static constexpr WinogradKernels table(const char* name, const char* f43_name = nullptr) {
    WinogradKernels k{
        {name, input_rows, input_finish<4>, output_gather<4>, output_row<4>, output_row<4, float>},
        {}};
    if constexpr (std::is_same_v<T, Half>)
      k.f43 = {f43_name,         input_rows_f43, input_finish<6>,
               output_gather<6>, output_row<6>,  output_row<6, float>};
    return k;
  }
};

}  // namespace
}  // namespace voxrt::cpu
