// The pooling kernels written once over a vector type S and a storage type T.
#pragma once

#include <algorithm>
#include <limits>

#include "backends/cpu/kernels/eltwise/eltwise_impl.h"
#include "backends/cpu/kernels/pool/pool.h"

namespace voxrt::cpu {
namespace {

template <class S, class T, bool kMax>
struct PoolRowImpl {
  using V = typename S::V;
  static constexpr int W = S::kWidth;
  static constexpr int kMaxTaps = 32;  // wider windows run lane by lane
  static constexpr int kMaxRows = 1024;  // the driver's limit on rows per window

  static float identity() { return kMax ? -std::numeric_limits<float>::infinity() : 0.0f; }
  static float combine1(float v, float acc) {
    if constexpr (kMax)
      return v > acc ? v : acc;
    else
      return acc + v;
  }
  static V combine(V v, V acc) {
    if constexpr (kMax)
      return S::max(v, acc);  // NaN in v leaves acc
    else
      return S::add(acc, v);
  }

  static void run(const void* const* rows_v, int nrows, int padded_rows, bool include_pad,
                  int64_t step, int64_t count, const PoolAxis& a, void* y_v) {
    const T* const* rows0 = reinterpret_cast<const T* const*>(rows_v);
    T* y = static_cast<T*>(y_v);
    const int64_t k = a.kernel, s = a.stride, d = a.dilation, p = a.pad_begin;
    // Outputs whose every tap is inside the row: x * s - p >= 0, x * s - p + (k - 1) d < in.
    int64_t x_lo = p > 0 ? (p + s - 1) / s : 0;
    int64_t last = a.in - 1 - (k - 1) * d + p;
    int64_t x_hi = last >= 0 ? last / s + 1 : 0;
    if (x_hi > a.out) x_hi = a.out;
    if (x_lo > x_hi) x_lo = x_hi;
    Stride2 plan;
    bool s2 = k <= kMaxTaps && s == 2 && plan.init(a);
    const T* rows[kMaxRows];
    for (int64_t j = 0; j < count; ++j, y += a.out) {
      for (int r = 0; r < nrows; ++r) rows[r] = rows0[r] + j * step;
      int64_t x = 0;
      for (; x < x_lo; ++x) edge(rows, nrows, padded_rows, include_pad, a, x, y);
      if (k <= kMaxTaps && s == 1)
        x = stride1(rows, nrows, padded_rows, include_pad, a, x, x_hi, y);
      else if (s2)
        x = plan.run(rows, nrows, padded_rows, include_pad, a, x, x_hi, y);
      for (; x < a.out; ++x) edge(rows, nrows, padded_rows, include_pad, a, x, y);
    }
  }

  static V finish(V acc, int nrows, int padded_rows, bool include_pad, int64_t k) {
    if constexpr (kMax) {
      return acc;
    } else {
      float count = static_cast<float>((include_pad ? padded_rows : nrows) * k);
      return S::div(acc, S::set1(count));
    }
  }

  // Vector steps over [x, x_hi) with contiguous taps (the last one partial); returns x_hi.
  static int64_t stride1(const T* const* rows, int nrows, int padded_rows, bool include_pad,
                         const PoolAxis& a, int64_t x, int64_t x_hi, T* y) {
    const int64_t k = a.kernel, d = a.dilation, p = a.pad_begin;
    for (; x < x_hi; x += W) {
      int c = x_hi - x < W ? static_cast<int>(x_hi - x) : W;
      // Four accumulators: a single chain of k * nrows dependent adds would wait on latency.
      V acc[4] = {S::set1(identity()), S::set1(identity()), S::set1(identity()), S::set1(identity())};
      int i = 0;
      for (int r = 0; r < nrows; ++r)
        for (int64_t t = 0; t < k; ++t, i = (i + 1) & 3)
          acc[i] = combine(load_n<S>(rows[r] + x - p + t * d, c), acc[i]);
      V sum = combine(combine(acc[0], acc[1]), combine(acc[2], acc[3]));
      store_n<S>(y + x, finish(sum, nrows, padded_rows, include_pad, k), c);
    }
    return x_hi;
  }

  // Stride 2: tap t reads element 2x + o, o = t d - p, which is the even (o even) or odd lane of
  // the pair of vectors loaded at 2x + (o & ~1). Taps sharing a load share it.
  struct Stride2 {
    int64_t load_at[kMaxTaps];
    bool even[kMaxTaps] = {}, odd[kMaxTaps] = {};
    int loads = 0;
    int64_t reach = 0;  // a step over lanes [x, x + c) reads up to element 2(x + c - 1) + reach

    bool init(const PoolAxis& a) {
      for (int64_t t = 0; t < a.kernel; ++t) {
        int64_t o = t * a.dilation - a.pad_begin;
        int64_t at = o - (o & 1);
        int g = 0;
        while (g < loads && load_at[g] != at) ++g;
        if (g == loads) load_at[loads++] = at;
        (o & 1 ? odd : even)[g] = true;
        if (at + 1 > reach) reach = at + 1;
      }
      return true;
    }

    int64_t run(const T* const* rows, int nrows, int padded_rows, bool include_pad,
                const PoolAxis& a, int64_t x, int64_t x_hi, T* y) const {
      // Lanes whose pair of loads stays inside the row.
      int64_t end = (a.in - 1 - reach) / 2 + 1;
      if (a.in - 1 - reach < 0) end = 0;
      if (end > x_hi) end = x_hi;
      const int64_t start = x;
      for (; x < end; x += W) {
        int c = end - x < W ? static_cast<int>(end - x) : W;
        int c_lo = 2 * c < W ? 2 * c : W, c_hi = 2 * c - c_lo;
        V acc = S::set1(identity());
        for (int g = 0; g < loads; ++g) {
          V lo = S::set1(identity()), hi = lo;
          for (int r = 0; r < nrows; ++r) {
            const T* src = rows[r] + 2 * x + load_at[g];
            lo = combine(load_n<S>(src, c_lo), lo);
            if (c_hi > 0) hi = combine(load_n<S>(src + W, c_hi), hi);
          }
          V ev, od;
          S::deinterleave(lo, hi, ev, od);
          if (even[g]) acc = combine(ev, acc);
          if (odd[g]) acc = combine(od, acc);
        }
        store_n<S>(y + x, finish(acc, nrows, padded_rows, include_pad, a.kernel), c);
      }
      return x > end ? (end > start ? end : start) : x;
    }
  };

  static void edge(const T* const* rows, int nrows, int padded_rows, bool include_pad,
                   const PoolAxis& a, int64_t x, T* y) {
    float acc = identity();
    // The taps inside the input, and inside the padded extent, by arithmetic rather than a walk
    // over the kernel, which may be far wider than the input. The same sum as ref::taps_within,
    // written again here: a kernel file compiled with its ISA's flags must not instantiate inline
    // code that other files share (the linker could keep this file's AVX-512 copy for all).
    const int64_t start = x * a.stride - a.pad_begin;
    auto first_at_or_after = [&](int64_t lo) {
      const int64_t gap = lo - start;
      return std::clamp<int64_t>(gap > 0 ? (gap + a.dilation - 1) / a.dilation : 0, 0, a.kernel);
    };
    const int64_t t0 = first_at_or_after(0), t1 = std::max(t0, first_at_or_after(a.in));
    const int64_t padded =
        std::max<int64_t>(0, first_at_or_after(a.in + a.pad_end) - first_at_or_after(-a.pad_begin));
    const int64_t inside = t1 - t0;
    for (int64_t t = t0; t < t1; ++t) {
      const int64_t i = start + t * a.dilation;
      for (int r = 0; r < nrows; ++r) acc = combine1(S::load1(rows[r] + i), acc);
    }
    if constexpr (!kMax) {
      int64_t count = include_pad ? padded_rows * padded : nrows * inside;
      acc = acc / static_cast<float>(count);  // 0 / 0 is NaN, as in the reference
    }
    S::store1(y + x, acc);
  }
};

template <class S, class T>
struct PoolImpl {
  static void max_rows(const void* const* rows, int nrows, int64_t step, int64_t count,
                       const PoolAxis& a, void* y) {
    PoolRowImpl<S, T, true>::run(rows, nrows, nrows, false, step, count, a, y);
  }
  static void avg_rows(const void* const* rows, int nrows, int padded_rows, bool include_pad,
                       int64_t step, int64_t count, const PoolAxis& a, void* y) {
    PoolRowImpl<S, T, false>::run(rows, nrows, padded_rows, include_pad, step, count, a, y);
  }
  static constexpr PoolKernels table(const char* name) { return {name, &max_rows, &avg_rows}; }
};

}  // namespace
}  // namespace voxrt::cpu
