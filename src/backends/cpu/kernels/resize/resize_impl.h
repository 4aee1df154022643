// The resize kernels written once over a vector type S and a storage type T.
#pragma once

#include "backends/cpu/kernels/eltwise/eltwise_impl.h"
#include "backends/cpu/kernels/resize/resize.h"

namespace voxrt::cpu {
namespace {

template <class S, class T>
struct ResizeImpl {
  using V = typename S::V;
  static constexpr int W = S::kWidth;

  // The c elements of the rows' blend from i.
  static V blend(const T* const* rows, const float* w, int nrows, int64_t i, int c) {
    if (nrows == 4) {
      // Trilinear's usual case (two depth taps by two height taps): two independent sums, so
      // a vector waits on two dependent FMAs rather than four.
      V a = S::fmadd(load_n<S>(rows[1] + i, c), S::set1(w[1]),
                     S::mul(load_n<S>(rows[0] + i, c), S::set1(w[0])));
      V b = S::fmadd(load_n<S>(rows[3] + i, c), S::set1(w[3]),
                     S::mul(load_n<S>(rows[2] + i, c), S::set1(w[2])));
      return S::add(a, b);
    }
    V acc = S::mul(load_n<S>(rows[0] + i, c), S::set1(w[0]));
    for (int r = 1; r < nrows; ++r) acc = S::fmadd(load_n<S>(rows[r] + i, c), S::set1(w[r]), acc);
    return acc;
  }

  static void blend_rows(const void* const* rows_v, const float* w, int nrows, float* tmp,
                         int64_t n) {
    const T* const* rows = reinterpret_cast<const T* const*>(rows_v);
    for_vectors<S>(n,
                   [&](int64_t i, int c) { store_n<S>(tmp + i, blend(rows, w, nrows, i, c), c); });
  }

  static void lerp(const float* tmp, const int32_t* x0, const int32_t* x1, const float* w0,
                   const float* w1, void* y_v, int64_t n, bool stream) {
    T* y = static_cast<T*>(y_v);
    int64_t i = 0;
    for (; i + W <= n; i += W) {
      V a = S::gather(tmp, x0 + i), b = S::gather(tmp, x1 + i);
      store_n<S>(y + i, S::fmadd(b, S::load(w1 + i), S::mul(a, S::load(w0 + i))), W, stream);
    }
    for (; i < n; ++i) {
      float v = w0[i] * tmp[x0[i]] + w1[i] * tmp[x1[i]];
      S::store_partial(y + i, S::set1(v), 1);
    }
  }

  static void blend_lerp_x2(const void* const* rows_v, const float* w, int nrows, void* y_v,
                            int64_t n, bool stream) {
    const T* const* rows = reinterpret_cast<const T* const*>(rows_v);
    T* y = static_cast<T*>(y_v);
    const V q = S::set1(0.25f), tq = S::set1(0.75f);
    // cur holds elements [i, i + c); its neighbours come from the vectors beside it in
    // registers, the row's ends repeating its first and last element.
    int c = static_cast<int>(std::min<int64_t>(n, W));
    V cur = blend(rows, w, nrows, 0, c);
    V before = S::broadcast_lane(cur, 0);
    for (int64_t i = 0; i < n;) {
      V prev = S::shift_up(cur, before), next, after = cur;
      const int64_t i_next = i + W;
      const int c_next = static_cast<int>(std::min<int64_t>(n - i_next, W));
      if (c_next > 0) {
        after = blend(rows, w, nrows, i_next, c_next);
        next = S::shift_down(cur, after);
      } else {
        next = S::select(S::first(c - 1), S::shift_down(cur, cur), S::broadcast_lane(cur, c - 1));
      }
      V ev = S::fmadd(cur, tq, S::mul(prev, q));
      V od = S::fmadd(cur, tq, S::mul(next, q));
      V lo, hi;
      S::interleave(ev, od, lo, hi);
      if (c == W) {
        store_n<S>(y + 2 * i, lo, W, stream);
        store_n<S>(y + 2 * i + W, hi, W, stream);
      } else {
        int c2 = 2 * c;
        S::store_partial(y + 2 * i, lo, c2 < W ? c2 : W);
        if (c2 > W) S::store_partial(y + 2 * i + W, hi, c2 - W);
      }
      before = cur;
      cur = after;
      c = c_next;
      i = i_next;
    }
  }

  static constexpr ResizeKernels table(const char* name) {
    return {name, &blend_rows, &lerp, &blend_lerp_x2};
  }
};

}  // namespace
}  // namespace voxrt::cpu
