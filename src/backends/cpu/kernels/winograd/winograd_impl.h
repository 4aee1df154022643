// The Winograd transforms written once over a vector type S (vec/*.h) and a storage type T (float
// or Half). Included by the per-ISA sources, which instantiate it.
#pragma once

#include <algorithm>
#include <cassert>

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

  template <Act A>
  static void finish_row(const float* o, int64_t stride, int64_t len, int64_t cols, float bias,
                         const T* r, const ActVec<S>& pv, bool after, T* y) {
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

  static constexpr WinogradKernels table(const char* name) {
    return WinogradKernels{name, input_rows, input_finish, output_gather, output_row};
  }
};

}  // namespace
}  // namespace voxrt::cpu
