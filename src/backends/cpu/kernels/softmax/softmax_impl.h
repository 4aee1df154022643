// The softmax kernels written once over a vector type S and a storage type T.
#pragma once

#include <limits>

#include "backends/cpu/kernels/eltwise/eltwise_impl.h"
#include "backends/cpu/kernels/softmax/softmax.h"

namespace voxrt::cpu {
namespace {

template <class S, class T>
struct SoftmaxImpl {
  using V = typename S::V;
  static constexpr int W = S::kWidth;
  static constexpr int64_t kBlock = 256 * W;

  static V max_keep_nan(V m, V v) { return S::select(S::lt(m, v), v, S::select(S::is_nan(v), v, m)); }

  // A NaN anywhere makes the row NaN, as exp(NaN - max) does in the reference.
  static void row(const T* x, T* y, int64_t n) {
    const V lowest = S::set1(-std::numeric_limits<float>::infinity());
    V m = lowest;
    for_vectors<S>(n, [&](int64_t i, int c) {
      m = max_keep_nan(m, S::select(S::first(c), load_n<S>(x + i, c), lowest));
    });
    float mf = S::hmax(m);
    float nan = S::hsum(S::select(S::is_nan(m), m, S::zero()));  // NaN if any lane is
    V mx = S::set1(nan != nan ? nan : mf);
    double sum = 0;
    for (int64_t i = 0; i < n;) {
      int64_t end = i + kBlock < n ? i + kBlock : n;
      V acc = S::zero();
      for (; i < end; i += W) {
        int c = end - i < W ? static_cast<int>(end - i) : W;
        V e = vexp<S>(S::sub(load_n<S>(x + i, c), mx));
        acc = S::add(acc, S::select(S::first(c), e, S::zero()));
      }
      sum += static_cast<double>(S::hsum(acc));
    }
    V inv = S::set1(static_cast<float>(1.0 / sum));
    for_vectors<S>(n, [&](int64_t i, int c) {
      store_n<S>(y + i, S::mul(vexp<S>(S::sub(load_n<S>(x + i, c), mx)), inv), c);
    });
  }

  // Rows shorter than a few vectors, a block of them at a time in an fp32 buffer: lanes take
  // one row each (gathers) for the max and the sum, then the output is vectorized over elements.
  static void short_rows(const T* x, T* y, int64_t rows, int64_t n) {
    constexpr int64_t kBuf = 1024;
    float v[kBuf], row_max[kBuf] = {}, row_inv[kBuf] = {};
    int32_t row_of[kBuf + W];
    for (int64_t j = 0, r = 0, k = 0; j < kBuf + W; ++j) {
      row_of[j] = static_cast<int32_t>(r < kBuf ? r : kBuf - 1);
      if (++k == n) k = 0, ++r;
    }
    int64_t per_block = kBuf / n;
    for (int64_t r0 = 0; r0 < rows; r0 += per_block) {
      int64_t nr = rows - r0 < per_block ? rows - r0 : per_block, m = nr * n;
      const T* xb = x + r0 * n;
      for_vectors<S>(m, [&](int64_t i, int c) { store_n<S>(v + i, load_n<S>(xb + i, c), c); });
      for_vectors<S>(nr, [&](int64_t r, int c) {
        int32_t start[W];
        for (int i = 0; i < W; ++i) start[i] = static_cast<int32_t>((r + (i < c ? i : c - 1)) * n);
        V mx = S::set1(-std::numeric_limits<float>::infinity());
        for (int64_t k = 0; k < n; ++k) mx = max_keep_nan(mx, S::gather(v + k, start));
        V sum = S::zero();
        for (int64_t k = 0; k < n; ++k) sum = S::add(sum, vexp<S>(S::sub(S::gather(v + k, start), mx)));
        store_n<S>(row_max + r, mx, c);
        store_n<S>(row_inv + r, S::div(S::set1(1.0f), sum), c);
      });
      T* yb = y + r0 * n;
      for_vectors<S>(m, [&](int64_t i, int c) {
        V e = vexp<S>(S::sub(load_n<S>(v + i, c), S::gather(row_max, row_of + i)));
        store_n<S>(yb + i, S::mul(e, S::gather(row_inv, row_of + i)), c);
      });
    }
  }

  static void rows(const void* x_v, void* y_v, int64_t rows, int64_t n) {
    const T* x = static_cast<const T*>(x_v);
    T* y = static_cast<T*>(y_v);
    if (n < 2 * W && n <= 64) return short_rows(x, y, rows, n);
    for (int64_t r = 0; r < rows; ++r) row(x + r * n, y + r * n, n);
  }

  // Exponentials of up to kCache channels are kept from the sum for the output.
  static constexpr int64_t kCache = 64;

  static void strided(const void* x_v, void* y_v, int64_t n, int64_t stride, int64_t count) {
    const T* x = static_cast<const T*>(x_v);
    T* y = static_cast<T*>(y_v);
    V cache[kCache];
    bool cached = n <= kCache;
    for_vectors<S>(count, [&](int64_t j, int c) {
      V m = S::set1(-std::numeric_limits<float>::infinity());
      for (int64_t k = 0; k < n; ++k) m = max_keep_nan(m, load_n<S>(x + k * stride + j, c));
      V sum = S::zero();
      for (int64_t k = 0; k < n; ++k) {
        V e = vexp<S>(S::sub(load_n<S>(x + k * stride + j, c), m));
        if (cached) cache[k] = e;
        sum = S::add(sum, e);
      }
      V inv = S::div(S::set1(1.0f), sum);
      for (int64_t k = 0; k < n; ++k) {
        V e = cached ? cache[k] : vexp<S>(S::sub(load_n<S>(x + k * stride + j, c), m));
        store_n<S>(y + k * stride + j, S::mul(e, inv), c);
      }
    });
  }

  static constexpr SoftmaxKernels table(const char* name) { return {name, &rows, &strided}; }
};

}  // namespace
}  // namespace voxrt::cpu
