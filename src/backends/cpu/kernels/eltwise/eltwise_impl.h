// The elementwise kernels written once over a vector type S (vec/*.h) and a storage type T
// (float or Half). Included by the per-ISA sources, which instantiate it.
#pragma once

#include <algorithm>

#include "backends/cpu/kernels/eltwise/eltwise.h"
#include "backends/cpu/kernels/vec/vec_math.h"

namespace voxrt::cpu {
namespace {

template <class S>
typename S::V binop(BinOp op, typename S::V a, typename S::V b) {
  switch (op) {
    case BinOp::add: return S::add(a, b);
    case BinOp::sub: return S::sub(a, b);
    case BinOp::mul: return S::mul(a, b);
    case BinOp::div: return S::div(a, b);
    // A NaN on the right wins; on the left it survives the select.
    case BinOp::min: return S::select(S::is_nan(b), b, S::select(S::lt(b, a), b, a));
    case BinOp::max: return S::select(S::is_nan(b), b, S::select(S::lt(a, b), b, a));
  }
  return a;
}

/// Calls f(i, count) over [0, n) in vector steps; the last call may have count < kWidth.
template <class S, class F>
void for_vectors(int64_t n, F&& f) {
  constexpr int W = S::kWidth;
  int64_t i = 0;
  for (; i + W <= n; i += W) f(i, W);
  if (i < n) f(i, static_cast<int>(n - i));
}

template <class S, class T>
typename S::V load_n(const T* p, int count) {
  return count == S::kWidth ? S::load(p) : S::load_partial(p, count);
}
template <class S, class T>
void store_n(T* p, typename S::V v, int count) {
  if (count == S::kWidth)
    S::store(p, v);
  else
    S::store_partial(p, v, count);
}

/// store_n, except that with `stream` a whole vector at an address aligned to its bytes goes out
/// as a non-temporal store (S::stream): outputs written past the caches (driver_util.h's
/// streams_output), whose writer fences before they are read.
template <class S, class T>
void store_n(T* p, typename S::V v, int count, bool stream) {
  if (stream && count == S::kWidth && reinterpret_cast<uintptr_t>(p) % (S::kWidth * sizeof(T)) == 0)
    S::stream(p, v);
  else
    store_n<S>(p, v, count);
}

template <class S, class T>
struct EltwiseImpl {
  using V = typename S::V;

  static void unary(const void* xv, void* yv, int64_t n, const ActParams& p) {
    const T* x = static_cast<const T*>(xv);
    T* y = static_cast<T*>(yv);
    with_act(p.act, [&]<Act A>() {
      ActVec<S> pv(p);
      for_vectors<S>(n, [&](int64_t i, int c) {
        store_n<S>(y + i, activate<S, A>(load_n<S>(x + i, c), pv), c);
      });
    });
  }

  static void affine(const void* xv, const void* rv, void* yv, int64_t n, float shift, float scale,
                     float bias, const ActParams& p, bool r_after_act) {
    const T* x = static_cast<const T*>(xv);
    const T* r = static_cast<const T*>(rv);
    T* y = static_cast<T*>(yv);
    with_act(p.act, [&]<Act A>() {
      ActVec<S> pv(p);
      V sh = S::set1(shift), sc = S::set1(scale), b = S::set1(bias);
      if (r && r_after_act)
        for_vectors<S>(n, [&](int64_t i, int c) {
          V v = activate<S, A>(S::fmadd(S::sub(load_n<S>(x + i, c), sh), sc, b), pv);
          store_n<S>(y + i, S::add(v, load_n<S>(r + i, c)), c);
        });
      else if (r)
        for_vectors<S>(n, [&](int64_t i, int c) {
          V v = S::fmadd(S::sub(load_n<S>(x + i, c), sh), sc, b);
          store_n<S>(y + i, activate<S, A>(S::add(v, load_n<S>(r + i, c)), pv), c);
        });
      else if (shift == 0.0f)  // x - 0 is x, -0 and NaN included: one operation less per vector
        for_vectors<S>(n, [&](int64_t i, int c) {
          store_n<S>(y + i, activate<S, A>(S::fmadd(load_n<S>(x + i, c), sc, b), pv), c);
        });
      else
        for_vectors<S>(n, [&](int64_t i, int c) {
          V v = S::fmadd(S::sub(load_n<S>(x + i, c), sh), sc, b);
          store_n<S>(y + i, activate<S, A>(v, pv), c);
        });
    });
  }

  static void binary(const void* av, const void* bv, void* yv, int64_t n, BinOp op) {
    const T* a = static_cast<const T*>(av);
    const T* b = static_cast<const T*>(bv);
    T* y = static_cast<T*>(yv);
    for_vectors<S>(n, [&](int64_t i, int c) {
      store_n<S>(y + i, binop<S>(op, load_n<S>(a + i, c), load_n<S>(b + i, c)), c);
    });
  }

  static void binary_scalar(const void* av, float s, void* yv, int64_t n, BinOp op,
                            bool scalar_first) {
    const T* a = static_cast<const T*>(av);
    T* y = static_cast<T*>(yv);
    V sv = S::set1(s);
    for_vectors<S>(n, [&](int64_t i, int c) {
      V x = load_n<S>(a + i, c);
      store_n<S>(y + i, scalar_first ? binop<S>(op, sv, x) : binop<S>(op, x, sv), c);
    });
  }

  static void add_rows(const void* xv, int64_t x_stride, void* yv, int64_t y_stride, int64_t rows,
                       int64_t n) {
    for (int64_t r = 0; r < rows; ++r) {
      const T* x = static_cast<const T*>(xv) + r * x_stride;
      T* y = static_cast<T*>(yv) + r * y_stride;
      for_vectors<S>(n, [&](int64_t i, int c) {
        store_n<S>(y + i, S::add(load_n<S>(y + i, c), load_n<S>(x + i, c)), c);
      });
    }
  }

  // Output rows [h0, h0 + H) over positions [0, n): two vectors of positions at a time, so each
  // x load serves H rows and 2H FMA chains run side by side.
  template <int H>
  static void mix_rows(const float* x, int64_t x_stride, int64_t m, const float* w, const float* b,
                       int64_t h0, int64_t n, T* y, int64_t y_stride) {
    constexpr int W = S::kWidth;
    auto bias = [&](int h) { return S::set1(b ? b[h0 + h] : 0.0f); };
    int64_t i = 0;
    for (; i + 2 * W <= n; i += 2 * W) {
      V a0[H], a1[H];
      for (int h = 0; h < H; ++h) a0[h] = a1[h] = bias(h);
      for (int64_t c = 0; c < m; ++c) {
        const V x0 = S::load(x + c * x_stride + i), x1 = S::load(x + c * x_stride + i + W);
        for (int h = 0; h < H; ++h) {
          const V wc = S::set1(w[(h0 + h) * m + c]);
          a0[h] = S::fmadd(wc, x0, a0[h]);
          a1[h] = S::fmadd(wc, x1, a1[h]);
        }
      }
      for (int h = 0; h < H; ++h) {
        S::store(y + (h0 + h) * y_stride + i, a0[h]);
        S::store(y + (h0 + h) * y_stride + i + W, a1[h]);
      }
    }
    for (; i < n; i += W) {
      const int count = static_cast<int>(std::min<int64_t>(W, n - i));
      V a[H];
      for (int h = 0; h < H; ++h) a[h] = bias(h);
      for (int64_t c = 0; c < m; ++c) {
        const V xc = load_n<S>(x + c * x_stride + i, count);
        for (int h = 0; h < H; ++h) a[h] = S::fmadd(S::set1(w[(h0 + h) * m + c]), xc, a[h]);
      }
      for (int h = 0; h < H; ++h) store_n<S>(y + (h0 + h) * y_stride + i, a[h], count);
    }
  }

  static void mix(const float* x, int64_t x_stride, int64_t m, const float* w, const float* b,
                  int64_t mh, int64_t n, void* yv, int64_t y_stride) {
    T* y = static_cast<T*>(yv);
    for (int64_t h0 = 0; h0 < mh; h0 += 4) {
      switch (std::min<int64_t>(4, mh - h0)) {
        case 1: mix_rows<1>(x, x_stride, m, w, b, h0, n, y, y_stride); break;
        case 2: mix_rows<2>(x, x_stride, m, w, b, h0, n, y, y_stride); break;
        case 3: mix_rows<3>(x, x_stride, m, w, b, h0, n, y, y_stride); break;
        default: mix_rows<4>(x, x_stride, m, w, b, h0, n, y, y_stride); break;
      }
    }
  }

  static constexpr EltwiseKernels table(const char* name) {
    return {name, &unary, &affine, &binary, &binary_scalar, &add_rows, &mix};
  }
};

template <class S, class From, class To>
void convert(const void* xv, void* yv, int64_t n) {
  const From* x = static_cast<const From*>(xv);
  To* y = static_cast<To*>(yv);
  for_vectors<S>(n, [&](int64_t i, int c) { store_n<S>(y + i, load_n<S>(x + i, c), c); });
}

template <class S>
constexpr CastKernels cast_table(const char* name) {
  return {name, &convert<S, float, Half>, &convert<S, Half, float>};
}

}  // namespace
}  // namespace voxrt::cpu
