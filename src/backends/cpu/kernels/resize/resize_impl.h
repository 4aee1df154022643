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

  static void blend_rows(const void* const* rows_v, const float* w, int nrows, float* tmp,
                         int64_t n) {
    const T* const* rows = reinterpret_cast<const T* const*>(rows_v);
    if (nrows == 4) {
      // Trilinear's usual case (two depth taps by two height taps): two independent sums, so
      // a vector waits on two dependent FMAs rather than four.
      const T *r0 = rows[0], *r1 = rows[1], *r2 = rows[2], *r3 = rows[3];
      const V w0 = S::set1(w[0]), w1 = S::set1(w[1]), w2 = S::set1(w[2]), w3 = S::set1(w[3]);
      for_vectors<S>(n, [&](int64_t i, int c) {
        V a = S::fmadd(load_n<S>(r1 + i, c), w1, S::mul(load_n<S>(r0 + i, c), w0));
        V b = S::fmadd(load_n<S>(r3 + i, c), w3, S::mul(load_n<S>(r2 + i, c), w2));
        store_n<S>(tmp + i, S::add(a, b), c);
      });
      return;
    }
    for_vectors<S>(n, [&](int64_t i, int c) {
      V acc = S::mul(load_n<S>(rows[0] + i, c), S::set1(w[0]));
      for (int r = 1; r < nrows; ++r) acc = S::fmadd(load_n<S>(rows[r] + i, c), S::set1(w[r]), acc);
      store_n<S>(tmp + i, acc, c);
    });
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

  static void lerp_x2(const float* tmp, void* y_v, int64_t n, bool stream) {
    T* y = static_cast<T*>(y_v);
    const V q = S::set1(0.25f), tq = S::set1(0.75f);
    for_vectors<S>(n, [&](int64_t i, int c) {
      V prev = load_n<S>(tmp + i - 1, c), cur = load_n<S>(tmp + i, c),
        next = load_n<S>(tmp + i + 1, c);
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
    });
  }

  static constexpr ResizeKernels table(const char* name) {
    return {name, &blend_rows, &lerp, &lerp_x2};
  }
};

}  // namespace
}  // namespace voxrt::cpu
