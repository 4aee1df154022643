// The reduction kernels written once over a vector type S and a storage type T.
#pragma once

#include <limits>

#include "backends/cpu/kernels/eltwise/eltwise_impl.h"
#include "backends/cpu/kernels/reduce/reduce.h"

namespace voxrt::cpu {
namespace {

template <class S, class T>
struct ReduceImpl {
  using V = typename S::V;
  static constexpr int W = S::kWidth;
  // Each lane adds at most this many values in fp32 before the total moves to double.
  static constexpr int64_t kBlock = 128 * W;

  static void moments(const void* xv, int64_t n, float shift, double* sum, double* sum_sq) {
    const T* x = static_cast<const T*>(xv);
    V k = S::set1(shift);
    double s1 = 0, s2 = 0;
    for (int64_t i = 0; i < n;) {
      int64_t end = i + kBlock < n ? i + kBlock : n;
      V a1 = S::zero(), a2 = S::zero(), b1 = S::zero(), b2 = S::zero();
      for (; i + 2 * W <= end; i += 2 * W) {
        V d = S::sub(S::load(x + i), k), e = S::sub(S::load(x + i + W), k);
        a1 = S::add(a1, d);
        a2 = S::fmadd(d, d, a2);
        b1 = S::add(b1, e);
        b2 = S::fmadd(e, e, b2);
      }
      for (; i < end; i += W) {
        int c = end - i < W ? static_cast<int>(end - i) : W;
        V d = S::select(S::first(c), S::sub(load_n<S>(x + i, c), k), S::zero());
        a1 = S::add(a1, d);
        a2 = S::fmadd(d, d, a2);
      }
      s1 += static_cast<double>(S::hsum(S::add(a1, b1)));
      s2 += static_cast<double>(S::hsum(S::add(a2, b2)));
    }
    *sum = s1;
    *sum_sq = s2;
  }

  static double sum(const void* xv, int64_t n) {
    const T* x = static_cast<const T*>(xv);
    double s = 0;
    for (int64_t i = 0; i < n;) {
      int64_t end = i + kBlock < n ? i + kBlock : n;
      V a = S::zero(), b = S::zero();
      for (; i + 2 * W <= end; i += 2 * W) {
        a = S::add(a, S::load(x + i));
        b = S::add(b, S::load(x + i + W));
      }
      for (; i < end; i += W) {
        int c = end - i < W ? static_cast<int>(end - i) : W;
        a = S::add(a, load_n<S>(x + i, c));
      }
      s += static_cast<double>(S::hsum(S::add(a, b)));
    }
    return s;
  }

  static float max(const void* xv, int64_t n) {
    const T* x = static_cast<const T*>(xv);
    const V lowest = S::set1(-std::numeric_limits<float>::infinity());
    V m = lowest;
    V nan = S::zero();  // stays zero unless a NaN is seen
    for_vectors<S>(n, [&](int64_t i, int c) {
      V v = S::select(S::first(c), load_n<S>(x + i, c), lowest);
      m = S::max(v, m);
      nan = S::select(S::is_nan(v), v, nan);
    });
    float r = S::hmax(m);
    float q = S::hsum(nan);
    return q != q ? q : r;
  }

  static constexpr ReduceKernels table(const char* name) { return {name, &moments, &sum, &max}; }
};

}  // namespace
}  // namespace voxrt::cpu
